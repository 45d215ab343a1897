"""The code every process shares, in five rooms by role: config, wire, text, transport, store.

Imports point down the rooms (``docs/ARCHITECTURE.md``, "Layers"); nothing here imports a service.
"""
