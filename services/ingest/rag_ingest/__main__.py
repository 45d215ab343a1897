"""``python -m rag_ingest``: run the ingest service alone, configured by environment."""

from rag_common.transport.runner import run_service
from rag_ingest.app import create_app
from rag_ingest.settings import IngestSettings

if __name__ == "__main__":
    run_service(create_app, IngestSettings)
