"""``python -m rag_generator``: run the generator alone, configured by environment."""

from rag_common.transport.runner import run_service
from rag_generator.app import create_app
from rag_generator.settings import GeneratorSettings

if __name__ == "__main__":
    run_service(create_app, GeneratorSettings)
