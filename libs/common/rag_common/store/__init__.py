"""What the system keeps: JetStream buckets and their records, and the vector store.

The buckets hold documents and their index, collection profiles and assessment jobs; the vector
store comes with what feeds it (embeddings, sentence vectors) and its backends, opened through
``factory``.

It may import ``config``, ``wire``, ``text`` and ``transport``; none of them imports it.
"""
