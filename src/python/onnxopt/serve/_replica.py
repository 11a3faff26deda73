"""The Serve deployment: one replica holds one model and answers

    POST /          {"inputs": {name: tensor}} -> {"outputs": {name: tensor}}; or one .npy array
                    (Content-Type application/x-npy) for a one-input model -> one .npy output
    POST /generate  {"input_ids": ..., "max_new_tokens": ..., "stream": false} -> {"sequences"}
                    ("stream": true: one JSON line per step, {"tokens": [...]}, then the sequences)
    GET  /info      the model's inputs, outputs, batch dimension, runner; /stats its batches

Runs of the model go through one @serve.batch queue: requests to a model whose inputs and outputs
share a symbolic first dimension are stacked along it (those with equal other dimensions), others
run one by one. Errors are answered, never dropped: what the client sent wrong, or the library
rejects for its inputs, is a 4xx with the library's one-line message; anything else a 500.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np
from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

import onnxopt

from ._model import model_info
from ._tensors import BadRequest, npy_dump, npy_load, tensor_to_json, tensors_from_json

_NPY = "application/x-npy"
_GENERATE_OPTIONS = ("max_new_tokens", "max_length", "eos_token_id", "temperature", "top_k",
                     "top_p", "seed")


def _status(e: BaseException) -> int:
    if isinstance(e, (BadRequest, onnxopt.InvalidArgumentError, onnxopt.NotFoundError)):
        return 400
    if isinstance(e, onnxopt.UnimplementedError):
        return 501
    if isinstance(e, onnxopt.ResourceExhaustedError):
        return 503
    return 500


def _error(e: BaseException) -> JSONResponse:
    message = str(e).splitlines()[0] if str(e) else type(e).__name__
    return JSONResponse({"error": message}, status_code=_status(e))


class ModelServer:
    def __init__(self, model: str, runner: str = "reference", max_batch_size: int = 8,
                 batch_wait_timeout_s: float = 0.01) -> None:
        self._model = model
        self._runner = runner
        self._info = model_info(model)
        self._batch_ids = itertools.count()
        self._batches: List[int] = []  # the number of requests of each model run, in order
        self._unhealthy: Optional[str] = None
        self._lock = threading.Lock()  # one run at a time on a cuda Session
        self._session = onnxopt.cuda.Session(model) if runner == "cuda" else None
        self._run_batch.set_max_batch_size(max_batch_size)
        self._run_batch.set_batch_wait_timeout_s(batch_wait_timeout_s)
        ctx = serve.get_replica_context()
        self._replica = ctx.replica_id.unique_id if ctx else "local"

    def check_health(self) -> None:
        # Serve calls this every period and replaces the replica when it raises.
        if self._unhealthy:
            raise RuntimeError(self._unhealthy)

    def _run(self, inputs: Mapping[str, np.ndarray]) -> Dict[str, Any]:
        missing = [n for n in self._info.inputs if n not in inputs]
        if missing:
            raise BadRequest(f"missing input {missing[0]!r} (the model's inputs: "
                             f"{', '.join(self._info.inputs)})")
        if self._session is None:
            return onnxopt.run(self._model, inputs, runner=self._runner)
        try:
            with self._lock:
                return self._session.run(inputs)
        except (onnxopt.InvalidArgumentError, onnxopt.NotFoundError):
            raise
        except Exception as e:  # a device that failed stays failed: let Serve replace us
            self._unhealthy = f"cuda session failed: {e}"
            raise

    def _stack_key(self, inputs: Mapping[str, np.ndarray]) -> Optional[Tuple]:
        if self._info.batch_dim is None or any(a.ndim == 0 for a in inputs.values()):
            return None
        rows = {a.shape[0] for a in inputs.values()}
        if len(rows) != 1:
            return None
        return tuple(sorted((n, a.dtype.str, a.shape[1:]) for n, a in inputs.items()))

    def _run_stacked(self, group: List[Mapping[str, np.ndarray]]) -> List[Any]:
        """One model run for the group, its outputs split by rows; a run that fails, or whose
        outputs do not keep the rows, is done again request by request, so that one bad request
        answers for itself only."""
        if len(group) > 1:
            rows = [next(iter(r.values())).shape[0] for r in group]
            try:
                out = self._run({n: np.concatenate([r[n] for r in group]) for n in group[0]})
            except Exception:
                out = None
            if out is not None and all(isinstance(v, np.ndarray) and v.ndim and
                                       v.shape[0] == sum(rows) for v in out.values()):
                self._batches.append(len(group))
                batch_id = next(self._batch_ids)
                cuts = np.cumsum(rows)[:-1]
                parts = {n: np.split(v, cuts) for n, v in out.items()}
                return [({n: p[i] for n, p in parts.items()}, batch_id, len(group))
                        for i in range(len(group))]
        answers: List[Any] = []
        for request in group:
            self._batches.append(1)
            try:
                answers.append((self._run(request), next(self._batch_ids), 1))
            except Exception as e:
                answers.append(e)
        return answers

    def _run_all(self, requests: List[Mapping[str, np.ndarray]]) -> List[Any]:
        groups: Dict[Any, List[int]] = {}
        for i, r in enumerate(requests):
            key = self._stack_key(r)
            groups.setdefault(key if key is not None else ("alone", i), []).append(i)
        answers: List[Any] = [None] * len(requests)
        for members in groups.values():
            for i, a in zip(members, self._run_stacked([requests[i] for i in members])):
                answers[i] = a
        return answers

    @serve.batch(max_batch_size=8, batch_wait_timeout_s=0.01)
    async def _run_batch(self, requests: List[Mapping[str, np.ndarray]]) -> List[Any]:
        # Exceptions are returned, not raised: raising here would fail every request of the batch.
        try:
            return await asyncio.to_thread(self._run_all, requests)
        except Exception as e:
            return [e] * len(requests)

    async def _infer(self, request: Request) -> Response:
        npy = request.headers.get("content-type", "").startswith(_NPY)
        body = await request.body()
        if npy:
            if len(self._info.inputs) != 1:
                raise BadRequest(f"a .npy body is for a model of one input (this one takes "
                                 f"{', '.join(self._info.inputs)}); send JSON")
            inputs = {self._info.inputs[0]: npy_load(body)}
        else:
            inputs = tensors_from_json(_json(body))
        answer = await self._run_batch(inputs)
        if isinstance(answer, BaseException):
            raise answer
        outputs, batch_id, batch_size = answer
        headers = {"x-onnxopt-replica": self._replica, "x-onnxopt-batch": f"{batch_id}",
                   "x-onnxopt-batch-size": f"{batch_size}"}
        if npy:
            name = request.query_params.get("output") or (
                self._info.outputs[0] if len(self._info.outputs) == 1 else None)
            if name not in outputs:
                raise BadRequest(f"choose the output with ?output=NAME (the model's outputs: "
                                 f"{', '.join(outputs)})")
            return Response(npy_dump(outputs[name]), media_type=_NPY, headers=headers)
        return JSONResponse({"outputs": {n: tensor_to_json(v) for n, v in outputs.items()}},
                            headers=headers)

    async def _generate(self, request: Request) -> Response:
        body = _json(await request.body())
        if not isinstance(body, Mapping) or "input_ids" not in body:
            raise BadRequest('the body is a JSON object {"input_ids": [...], ...}')
        unknown = set(body) - {"input_ids", "attention_mask", "stream", *_GENERATE_OPTIONS}
        if unknown:
            raise BadRequest(f"unknown field {sorted(unknown)[0]!r}")
        options = {k: body[k] for k in _GENERATE_OPTIONS if k in body}
        try:
            return await self._generate_with(body, options)
        except onnxopt.Error:
            raise
        except (TypeError, ValueError) as e:  # ids that are not rows of ints, an option's type
            raise BadRequest(f"input_ids, attention_mask or an option: {e}") from None

    async def _generate_with(self, body: Mapping[str, Any], options: Dict[str, Any]) -> Response:
        if not body.get("stream"):
            ids = await asyncio.to_thread(
                onnxopt.generate, self._model, body["input_ids"],
                attention_mask=body.get("attention_mask"), runner=self._runner, **options)
            return JSONResponse({"sequences": ids.tolist()})
        gen = onnxopt.Generator(self._model, runner=self._runner, **options)
        # started before the response, so that a bad prompt is still answered with a 4xx
        await asyncio.to_thread(gen.start, body["input_ids"], body.get("attention_mask"))
        flat = all(isinstance(t, int) for t in body["input_ids"])  # answered as given, as above
        return StreamingResponse(_steps(gen, flat), media_type="application/x-ndjson")

    async def __call__(self, request: Request) -> Response:
        path = request.url.path.rstrip("/").rsplit("/", 1)[-1]
        try:
            if request.method == "GET" and path == "info":
                return JSONResponse({"model": self._model, "runner": self._runner,
                                     "inputs": self._info.inputs, "outputs": self._info.outputs,
                                     "batch_dim": self._info.batch_dim})
            if request.method == "GET" and path == "stats":
                return JSONResponse({"replica": self._replica, "batches": self._batches})
            if request.method == "POST" and path == "generate":
                return await self._generate(request)
            if request.method == "POST":
                return await self._infer(request)
            return JSONResponse({"error": f"no {request.method} {request.url.path}: POST / "
                                 "(tensors), POST /generate, GET /info or /stats"},
                                status_code=404)
        except Exception as e:
            return _error(e)


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError as e:
        raise BadRequest(f"the body is not JSON: {e}") from None


async def _steps(gen: "onnxopt.Generator", flat: bool):
    try:
        while not gen.done:
            tokens = await asyncio.to_thread(gen.step)
            yield json.dumps({"tokens": tokens}) + "\n"
        sequences = gen.sequences.tolist()
        yield json.dumps({"sequences": sequences[0] if flat else sequences}) + "\n"
    except Exception as e:  # the status is sent already: the error is the stream's last line
        yield json.dumps({"error": str(e).splitlines()[0]}) + "\n"
