"""``python -m rag_gateway``: serve the HTTP API alone, configured by environment."""

import uvicorn

from rag_common.transport.runner import configure_logging, load_settings
from rag_gateway.app import create_app
from rag_gateway.serving import uvicorn_config
from rag_gateway.settings import GatewaySettings

if __name__ == "__main__":
    settings = load_settings(GatewaySettings)
    configure_logging(settings.log_level)
    app = create_app(settings)
    uvicorn.Server(uvicorn_config(app, settings, host=settings.host, port=settings.port, log_level="info")).run()
