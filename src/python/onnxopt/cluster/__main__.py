"""`python -m onnxopt.cluster`: see onnxopt.cluster."""

import sys

from . import main

sys.exit(main())
