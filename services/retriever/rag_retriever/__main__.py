"""``python -m rag_retriever``: run the retriever alone, configured by environment."""

from rag_common.transport.runner import run_service
from rag_retriever.app import create_app
from rag_retriever.settings import RetrieverSettings

if __name__ == "__main__":
    run_service(create_app, RetrieverSettings)
