"""A model served over HTTP by Ray Serve: replicas that each hold the model, request batching,
tensors in and out as JSON or .npy, and generation (ids in, ids or a stream of tokens out) for a
decoder with a KV cache. docs/serving.md describes the API.

    python -m onnxopt.serve MODEL [--runner reference|cuda] [--replicas N] [--port P]

or, in a program on a Ray cluster:

    from ray import serve
    serve.run(onnxopt.serve.app("model.onnx", runner="cuda"), route_prefix="/")

Ray is an optional dependency (`pip install onnxopt[serve]`): importing this package does not
import it; app() and main() do. A model that cannot be read is refused before any replica starts.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import Any, Optional, Sequence

from ._model import model_info

__all__ = ["app", "main"]

_PROG = "python -m onnxopt.serve"
RUNNERS = ("reference", "cuda")


def app(model: str, *, runner: str = "reference", replicas: Optional[int] = None,
        max_batch_size: int = 8, batch_wait_timeout_s: float = 0.01,
        num_cpus: float = 1, name: str = "onnxopt") -> Any:
    """The Serve application of `model` (a path every replica can read). runner "cuda": each
    replica takes one GPU (ray_actor_options num_gpus=1) and holds an onnxopt.cuda.Session;
    replicas default to the cluster's GPUs. "reference": CPU replicas (num_cpus each), one by
    default. Requests wait up to batch_wait_timeout_s for others to share a model run of at most
    max_batch_size requests."""
    import ray
    from ray import serve

    from ._replica import ModelServer

    if runner not in RUNNERS:
        raise ValueError(f"runner {runner!r}: reference or cuda")
    model = os.path.abspath(model)
    try:  # read here too, so that a model no replica could read fails before any starts
        model_info(model)
    except Exception as e:
        raise ValueError(f"{model}: not an ONNX model: {e}") from None
    if replicas is None:
        gpus = int(ray.cluster_resources().get("GPU", 0)) if ray.is_initialized() else 0
        replicas = max(gpus, 1) if runner == "cuda" else 1
    actor = {"num_gpus": 1, "num_cpus": num_cpus} if runner == "cuda" else {"num_cpus": num_cpus}
    deployment = serve.deployment(ModelServer, name=name, num_replicas=replicas,
                                  ray_actor_options=actor, health_check_period_s=2,
                                  health_check_timeout_s=30)
    return deployment.bind(model, runner, max_batch_size, batch_wait_timeout_s)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=_PROG, description="Serve a model over HTTP with Ray Serve "
                                "until interrupted (docs/serving.md).")
    p.add_argument("model", help="the .onnx model")
    p.add_argument("--runner", choices=RUNNERS, default="reference",
                   help="reference: CPU replicas; cuda: one replica per GPU")
    p.add_argument("--replicas", type=int, help="default: one per GPU (cuda), else 1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--max-batch-size", type=int, default=8)
    p.add_argument("--batch-wait-ms", type=float, default=10)
    p.add_argument("--address", help="a running Ray cluster (auto or HOST:PORT); default: a "
                   "local Ray instance")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    if not os.path.isfile(args.model):
        print(f"{_PROG}: error: {args.model}: no such model file", file=sys.stderr)
        return 2
    try:
        model_info(args.model)
    except Exception as e:
        print(f"{_PROG}: error: {args.model}: not an ONNX model: {e}", file=sys.stderr)
        return 2
    if args.replicas is not None and args.replicas < 1:
        print(f"{_PROG}: error: --replicas must be at least 1", file=sys.stderr)
        return 2
    import ray
    from ray import serve

    ray.init(address=args.address, include_dashboard=False, log_to_driver=False)
    try:
        if args.runner == "cuda" and not ray.cluster_resources().get("GPU"):
            # Replicas asking for a GPU would wait for one for ever.
            print(f"{_PROG}: error: --runner cuda: the Ray instance has no GPU", file=sys.stderr)
            return 2
        serve.start(http_options={"host": args.host, "port": args.port})
        try:
            serve.run(app(args.model, runner=args.runner, replicas=args.replicas,
                          max_batch_size=args.max_batch_size,
                          batch_wait_timeout_s=args.batch_wait_ms / 1000), route_prefix="/")
        except Exception as e:  # the replicas' own errors are in Ray's Serve logs
            print(f"{_PROG}: error: {str(e).splitlines()[0]}", file=sys.stderr)
            return 1
        print(f"serving {args.model} ({args.runner}) at http://{args.host}:{args.port}/",
              flush=True)
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
        serve.shutdown()
    finally:
        ray.shutdown()
    return 0
