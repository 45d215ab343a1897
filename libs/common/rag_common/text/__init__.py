"""The one text toolkit, pure functions over strings: words, stems and stop words (``words``), the
quotable units an extractive answer may quote (``quotable``), citations (``citations``), numbers
that disagree between sources (``conflicts``) and the prompt-injection rules (``injection``).

Every service reads text through it, so a question and a passage are cut and compared by the same
rules everywhere. It imports ``config`` and ``wire`` only.
"""
