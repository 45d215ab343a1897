"""``python -m rag_router``: run the router alone, configured by environment."""

from rag_common.transport.runner import run_service
from rag_router.app import create_app
from rag_router.settings import RouterSettings

if __name__ == "__main__":
    run_service(create_app, RouterSettings)
