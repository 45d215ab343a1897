"""The one text toolkit: pure functions over strings, each text rule in one module.

- ``words``: tokens, words as written, names, Snowball stems, the stop-word lists;
- ``sentences``: the one sentence splitter, sentence and clause ends;
- ``lines``: what one line of a document is (code fence, Q:/A: line, list item, table row);
- ``markdown``: a Markdown document cut into sections at its headings (markdown-it-py);
- ``quotable``: the units an extractive answer may quote, cut the same way at ingest and in the
  generator;
- ``citations``, ``conflicts`` (numbers that disagree between sources) and ``injection`` (the
  prompt-injection rules).

Every service reads text through it, so a question and a passage are cut and compared by the same
rules everywhere. It imports ``config`` and ``wire`` only.
"""
