"""Configuration every process reads.

The settings bases (environment) and the collections file (per-collection profile texts). The
lowest room: it imports nothing else of ``rag_common``.
"""
