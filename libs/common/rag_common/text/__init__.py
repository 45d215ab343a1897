"""The one text toolkit: words, stems, stop words. Every service reads text through it, so a
question and a passage are cut and compared by the same rules everywhere."""
