"""The wire: every name, message and body that crosses a process, and the contracts made from them.

Every subject, stream and bucket name, the rules for names clients choose, the message models on
NATS and the bodies on HTTP, and the contracts generated from them (AsyncAPI, JSON Schema).

It imports only ``rag_common.config``; every other room and every service reads the wire from here.
"""
