"""What the system keeps: the JetStream buckets and the records in them (documents and their
index, collection profiles, assessment jobs), and the vector store with what feeds it (embeddings,
sentence vectors) and its backends, opened through ``factory``.

It may import ``config``, ``wire``, ``text`` and ``transport``; none of them imports it."""
