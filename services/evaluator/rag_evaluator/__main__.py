"""``python -m rag_evaluator``: run the evaluator alone, configured by environment."""

from rag_common.transport.runner import run_service
from rag_evaluator.app import create_app
from rag_evaluator.settings import EvaluatorSettings

if __name__ == "__main__":
    run_service(create_app, EvaluatorSettings)
