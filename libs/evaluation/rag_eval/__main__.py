"""``python -m rag_eval --dataset <dir>``: see :mod:`rag_eval.cli`."""

import sys

from rag_eval.cli import main

sys.exit(main())
