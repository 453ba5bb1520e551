"""Write ``src/strata/write/data/english_zipf.tsv.gz``: how common each English word is.

The forgotten-fact fingerprints (strata.write.fingerprints) weigh a word by how rare it is:
a forgotten "endometriosis" or "Larkspur" identifies the fact, a forgotten "street" does
not. The weights come from wordfreq's English list (Zipf scale: log10 of a word's
frequency per billion words; "the" is 7.7, "street" 5.3, "larkspur" 2.1). wordfreq's wheel
is 57 MB, more than the Lambda layer may carry, so its English words at or above
``--floor`` are written out once, with their Zipf value to one decimal; a word below the
floor (or not in the list) is rare. Run it in an environment with wordfreq installed::

    python eval/common_words.py [--floor 3.0] [--out src/strata/write/data/english_zipf.tsv.gz]

wordfreq's data is CC BY-SA 4.0 (Robyn Speer, https://github.com/rspeer/wordfreq): the file
written carries that notice in its header.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from importlib import metadata
from pathlib import Path

HEADER = ("# English word frequencies (Zipf scale) at or above {floor}, from wordfreq {version}"
          " (data CC BY-SA 4.0, Robyn Speer and contributors,"
          " https://github.com/rspeer/wordfreq). Written by eval/common_words.py.\n")
_WORD = re.compile(r"[a-z]+")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--floor", type=float, default=3.0)
    ap.add_argument("--out", type=Path,
                    default=Path(__file__).resolve().parent.parent
                    / "src/strata/write/data/english_zipf.tsv.gz")
    args = ap.parse_args()
    import wordfreq

    rows = []
    for word in wordfreq.iter_wordlist("en", "large"):
        zipf = wordfreq.zipf_frequency(word, "en", wordlist="large")
        if zipf < args.floor:
            break
        if _WORD.fullmatch(word):
            rows.append(f"{word}\t{zipf:.1f}\n")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    # mtime 0: the same list writes the same bytes.
    with gzip.GzipFile(args.out, "wb", mtime=0) as f:
        f.write(HEADER.format(floor=args.floor, version=metadata.version("wordfreq")).encode())
        f.write("".join(rows).encode())
    print(json.dumps({"words": len(rows), "floor": args.floor, "out": str(args.out),
                      "bytes": args.out.stat().st_size}))


if __name__ == "__main__":
    main()
