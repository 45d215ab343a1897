"""``python -m rag_scorecard --dataset <dir>``: see :mod:`rag_scorecard.cli`."""

import sys

from rag_scorecard.cli import main

sys.exit(main())
