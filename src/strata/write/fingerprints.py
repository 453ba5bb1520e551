"""Fingerprints of forgotten facts: what stays of a forgotten memory so that it stays forgotten.

A forgotten memory keeps no content, no embedding and no plain hash. What it leaves beside
its tombstone is a set of keyed hashes (HMAC-SHA256 under a secret of the tenant's own,
table ``fingerprint_keys``, truncated to 16 bytes) of its *features*, each with a weight:

- **decisive**: its canonical text, its lexical normal form (:mod:`.lexical`), and its slot
  with the value: any one of them in a candidate is the forgotten statement again;
- **identifiers**: what names the fact rather than the kind of fact -- a number of three or
  more digits ("4417", the parts of "415-555-0134"), a rare word (below ``RARE`` on the
  Zipf scale: "endometriosis", "Larkspur"), a name (capitalised inside a sentence and not a
  common word: "Marcus", "Berlin"). Any one of them in a candidate carries the fact;
- **context**: the other content words, weighted by how rare they are, and the short
  phrases two neighbouring content words make ("elm street"). A candidate that holds at
  least ``COVERAGE`` of their weight (and ``MIN_EVIDENCE`` of it) carries the fact: "I'm
  vegetarian" forgotten, "follows a vegetarian diet" carries it.

A word or phrase that other memories of the scope still hold when the fact is forgotten is
what the fact is *about*, not what it says ("Project Falcon" beside "Project Falcon's budget
is 40k"; "my daughter" beside "my daughter is allergic to peanuts"): it is left out of the
fingerprint, so forgetting the budget leaves the project's other facts alone, and what
identifies the forgotten fact is what sets it apart from them.

Words are matched in lexical normal form (lemmas, number words as digits), so "twelve Elm
Street" is "12 elm street", and a candidate's probe set is computed the same way from its
canonical text. The hashes are keyed, so a fingerprint cannot be confirmed by hashing a
guess, and a guess confirmed in one tenant says nothing about another.

A candidate that carries a forgotten fact is refused on every write path (the gate and the
tombstone checks of edits call :func:`find` through :func:`strata.write.tombstones.
find_tombstones`); :func:`split` keeps the clauses of an extracted statement that do not
carry it ("I live at <forgotten address>, and I drive a blue Subaru" keeps the Subaru).
"""

from __future__ import annotations

import gzip
import hashlib
import hmac
import re
import secrets
import unicodedata
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import psycopg

from strata.write import lexical
from strata.write.canonical import canonicalize

HASH_BYTES = 16
CONTEXT, IDENTIFIER, DECISIVE = 0, 1, 2

# Zipf scale (log10 of a word's frequency per billion words; english_zipf.tsv.gz, from
# wordfreq): "the" 7.7, "street" 5.3, "gym" 4.4, "cello" 3.3, "larkspur" 2.1.
COMMON = 6.0  # at or above: says nothing of what a fact is about ("have", "get", "go")
RARE = 3.0  # below (or not listed): a word that identifies what it is said about
NAME = 4.5  # a capitalised word inside a sentence below this is a name ("Marcus" 4.1)
IDENTIFIER_WEIGHT = 4.0
PHRASE_WEIGHT = 1.0
COVERAGE = 0.6
MIN_EVIDENCE = 2.0

_TOKEN = re.compile(r"\d+|[^\W\d_]+(?:'[^\W\d_]+)?")
_CAPITALISED = re.compile(r"(?<![\w'])([A-Z][^\W\d_]*)")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n]|\s[-\u2013\u2014])\s*[\"'(\[]*$")
_STOP = frozenset(
    "i me my mine we us our you your he him his she her it its they them their this that these "
    "those there here what which who whom whose when where why how a an the and or but if so as "
    "at by for from in into of on onto to with about over under than then too very just also "
    "not no nor do does did done be am is are was were been being have has had having will would "
    "shall should can could may might must user users user's m s t d ll re ve".split()
) | lexical.FUNCTION_WORDS | lexical.NEGATIONS


@lru_cache(maxsize=1)
def _zipf() -> dict[str, float]:
    """English words at or above Zipf 3.0 (eval/common_words.py wrote the file)."""
    data = resources.files("strata.write").joinpath("data/english_zipf.tsv.gz").read_bytes()
    out: dict[str, float] = {}
    for line in gzip.decompress(data).decode().splitlines():
        if line and not line.startswith("#"):
            word, zipf = line.split("\t")
            out[word] = float(zipf)
    return out


def zipf(word: str) -> float:
    """How common ``word`` is (0.0 below the list's floor)."""
    table = _zipf()
    return max(table.get(word, 0.0), table.get(lexical._lemma(word), 0.0))


@dataclass(frozen=True)
class Feature:
    text: str  # namespaced: "w:" word, "p:" phrase, "c:" canonical, "l:" lexical, "s:" slot
    weight: float
    kind: int


def _words(text: str) -> list[str]:
    """The content words of ``text`` in order, in normal form: casefolded, contractions
    expanded, number words as digits, lemmatised."""
    prepared = lexical._prepare(text)
    out = []
    for word in lexical._numbers(_TOKEN.findall(prepared)):
        if word in _STOP or (len(word) == 1 and not word.isdigit()):
            continue
        if word.isdigit():
            out.append(word.lstrip("0") or "0" if len(word) < 3 else word)
            continue
        lemma = lexical.american(lexical._lemma(word))
        lemma = lexical.derived_noun(lemma) or lemma  # "allergic" is "allergy"
        if lemma not in _STOP:
            out.append(lemma)
    return out


def _names(text: str) -> set[str]:
    """Words written with a capital inside a sentence (casefolded, lemmatised)."""
    text = unicodedata.normalize("NFKC", text)
    names = set()
    for m in _CAPITALISED.finditer(text):
        if m.group(1) == "I" or _SENTENCE_START.search(text[:m.start()]):
            continue
        names.add(lexical.american(lexical._lemma(m.group(1).casefold())))
    return names


def _decisive(canonical: str, slot: str | None, value: str | None) -> list[str]:
    out = [f"c:{canonical}"]
    form = lexical.normal_form(canonical)
    if form:
        out.append(f"l:{form}")
    if slot and value:
        out.append(f"s:{slot}={value}")
    return out


def _phrases(words: Sequence[str]) -> list[str]:
    return [f"p:{' '.join(sorted(pair))}" for pair in zip(words, words[1:]) if pair[0] != pair[1]]


def features(content: str, canonical: str, slot: str | None = None,
             value: str | None = None, *, shared: frozenset[str] = frozenset()) -> list[Feature]:
    """What a forgotten memory leaves: its features, weighted (see the module docstring).
    ``shared``: the word and phrase features other memories of the scope still hold (what
    the fact is about -- "Project Falcon" in a project's memories -- rather than what it
    says): they are left out, so only what sets the fact apart identifies it."""
    names = _names(content)
    out: dict[str, Feature] = {t: Feature(t, 0.0, DECISIVE) for t in _decisive(canonical, slot, value)}
    kept: list[str] = []
    for word in _words(content):
        if word.isdigit():
            strong = len(word) >= 3
            feature = Feature(f"w:{word}", IDENTIFIER_WEIGHT if strong else 1.0,
                              IDENTIFIER if strong else CONTEXT)
        else:
            z = zipf(word)
            if z >= COMMON:
                continue
            if z < RARE or (word in names and z < NAME):
                feature = Feature(f"w:{word}", IDENTIFIER_WEIGHT, IDENTIFIER)
            else:
                feature = Feature(f"w:{word}", round(COMMON - z, 2), CONTEXT)
        kept.append(word)
        if feature.text not in shared:
            out.setdefault(feature.text, feature)
    for phrase in _phrases(kept):
        if phrase not in shared:
            out.setdefault(phrase, Feature(phrase, PHRASE_WEIGHT, CONTEXT))
    return list(out.values())


def probes(canonical: str, slot: str | None = None, value: str | None = None) -> set[str]:
    """What a candidate is checked with: every feature text it could share with a forgotten
    memory (from its canonical text: a probe needs no capitals or weights)."""
    # The words a fingerprint can hold, neighbours as its phrases pair them (a word too
    # common to be a feature does not stand between two that are).
    words = [w for w in _words(canonical) if w.isdigit() or zipf(w) < COMMON]
    return {*_decisive(canonical, slot, value), *(f"w:{w}" for w in words), *_phrases(words)}


def held_elsewhere(cur: psycopg.Cursor, tenant_id: uuid.UUID, path: str,
                   contents: Iterable[tuple[str, str]],
                   apart: Sequence[uuid.UUID]) -> frozenset[str]:
    """The word and phrase features of the (content, canonical) pairs being forgotten that
    another memory in ``path``'s subtree still holds (not one of ``apart``, what is being
    forgotten; not a rejected one), in the lexical form probes use ("Postgres" holds
    "postgresql"): what the forgotten fact is about, not what it says."""
    wanted = {f.text for content, canonical in contents
              for f in features(content, canonical) if f.kind != DECISIVE}
    if not wanted:
        return frozenset()
    found: set[str] = set()
    for r in cur.execute(
            "SELECT canonical FROM memories WHERE tenant_id = %s AND path <@ %s::ltree"
            " AND status <> 'rejected' AND id <> ALL(%s)",
            (tenant_id, path, list(apart))).fetchall():
        found |= wanted.intersection(probes(r["canonical"]))
        if found == wanted:
            break
    return frozenset(found)


def keyed(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()[:HASH_BYTES]


def keyed_probes(key: bytes, canonical: str, slot: str | None = None,
                 value: str | None = None) -> set[bytes]:
    """A candidate's probes (:func:`probes`) hashed under ``key``."""
    return {keyed(key, t) for t in probes(canonical, slot, value)}


def carries(hashes: Sequence[bytes], weights: Sequence[float], kinds: Sequence[int],
            probe: set[bytes]) -> bool:
    """Whether a candidate whose keyed probes are ``probe`` carries the forgotten fact whose
    fingerprint is (``hashes``, ``weights``, ``kinds``)."""
    total = hit = 0.0
    for h, w, kind in zip(hashes, weights, kinds, strict=True):
        if kind == DECISIVE:
            if h in probe:
                return True
            continue
        total += w
        if h in probe:
            if kind == IDENTIFIER:
                return True
            hit += w
    return total > 0 and hit >= min(MIN_EVIDENCE, total) and hit >= COVERAGE * total


# --------------------------------------------------------------------------------------
# Clauses: what of an extracted statement survives a forgotten fact
# --------------------------------------------------------------------------------------

# Where one statement holds two: sentence ends, semicolons, dashes, and a comma or a
# conjunction that starts a new clause ("..., and I drive", "... but we adopted").
_CLAUSE = re.compile(
    r"(?<=[.!?;])\s+|\s*;\s*|\s+[-\u2013\u2014]+\s+|\s*\(\s*|\s*\)\s*"
    r"|,?\s+(?:and|but|also|plus|while|whereas|although|though|so|anyway|unrelated)[,:]?\s+"
    r"(?=(?:i|i'm|i've|i'd|we|we're|my|our|the user|they|their|he|she|also|now|just)\b)"
    r"|,\s+(?=(?:i|i'm|i've|we|my|our|the user|also|unrelated|anyway)\b)",
    re.IGNORECASE,
)
_MIN_CLAUSE_WORDS = 3


def clauses(text: str) -> list[str]:
    """``text`` cut where a new clause starts; each piece trimmed, a piece of fewer than
    three words joined to the one before it (the first, to the one after it)."""
    out: list[str] = []
    lead = ""
    for piece in _CLAUSE.split(text):
        piece = (piece or "").strip(" ,.;:-\u2013\u2014")
        if not piece:
            continue
        if len(piece.split()) < _MIN_CLAUSE_WORDS:
            if out:
                out[-1] = f"{out[-1]}, {piece}"
            else:
                lead = f"{lead}{piece}, "
            continue
        out.append(f"{lead}{piece}")
        lead = ""
    if lead:
        out.append(lead.rstrip(", "))
    return out


# --------------------------------------------------------------------------------------
# Storage
# --------------------------------------------------------------------------------------


def tenant_key(cur: psycopg.Cursor, tenant_id: uuid.UUID) -> tuple[uuid.UUID, bytes]:
    """The key new fingerprints of the tenant are made with (its oldest), made on first
    use. Concurrent first forgets may each make one: both are the tenant's, and each
    tombstone names the key it was made with."""
    row = cur.execute(_KEYS + " LIMIT 1", (tenant_id,)).fetchone()
    if row is None:
        row = cur.execute(
            "INSERT INTO fingerprint_keys (tenant_id, secret) VALUES (%s, %s) RETURNING id, secret",
            (tenant_id, secrets.token_bytes(32))).fetchone()
    return row["id"], bytes(row["secret"])


_KEYS = "SELECT id, secret FROM fingerprint_keys WHERE tenant_id = %s ORDER BY created_at, id"


def tenant_keys(cur: psycopg.Cursor, tenant_id: uuid.UUID) -> dict[uuid.UUID, bytes]:
    """Every key the tenant's fingerprints were made with (none: it has forgotten nothing)."""
    return {r["id"]: bytes(r["secret"]) for r in cur.execute(_KEYS, (tenant_id,)).fetchall()}


def fingerprint(key: bytes, feats: Iterable[Feature]) -> dict[str, list[Any]]:
    """The stored columns of a fingerprint."""
    feats = list(feats)
    return {"hashes": [keyed(key, f.text) for f in feats],
            "weights": [f.weight for f in feats], "kinds": [f.kind for f in feats]}


_IN_SCOPE = """
SELECT i.ord, t.id, t.fingerprint_key_id AS key_id, t.fingerprint, t.fingerprint_weights,
       t.fingerprint_kinds
FROM unnest(%(paths)s::ltree[]) WITH ORDINALITY AS i(path, ord)
JOIN tombstones t ON t.tenant_id = %(tenant)s AND t.reason = 'forgotten'
 AND i.path <@ t.path AND (t.until IS NULL OR t.until > now())
 AND t.fingerprint && %(probes)s::bytea[]
ORDER BY i.ord, t.created_at, t.id
"""


def find(cur: psycopg.Cursor, tenant_id: uuid.UUID,
         items: Sequence[tuple[str, str, str | None, str | None]]) -> dict[int, uuid.UUID]:
    """For each (path, canonical, slot, value) that carries a forgotten fact in its scope,
    the id of the oldest tombstone whose fingerprint it matches, by input index."""
    if not items:
        return {}
    keys = tenant_keys(cur, tenant_id)
    if not keys:
        return {}
    probe = {k: [keyed_probes(secret, canonical, slot, value)
                 for _, canonical, slot, value in items] for k, secret in keys.items()}
    rows = cur.execute(_IN_SCOPE, {
        "tenant": tenant_id, "paths": [i[0] for i in items],
        "probes": sorted(set().union(*(h for per in probe.values() for h in per))),
    }).fetchall()
    out: dict[int, uuid.UUID] = {}
    for r in rows:
        n = r["ord"] - 1
        if n not in out and carries([bytes(h) for h in r["fingerprint"]],
                                    r["fingerprint_weights"], r["fingerprint_kinds"],
                                    probe[r["key_id"]][n]):
            out[n] = r["id"]
    return out


def split(cur: psycopg.Cursor, tenant_id: uuid.UUID, path: str,
          texts: Sequence[str]) -> list[list[tuple[str, bool]]]:
    """Each text cut into clauses, each clause with whether it carries a forgotten fact in
    ``path``'s scope (none does where the tenant has forgotten nothing)."""
    pieces = [clauses(t) or [t] for t in texts]
    flat = [(path, canonicalize(c), None, None) for one in pieces for c in one]
    hit = find(cur, tenant_id, flat)
    out, n = [], 0
    for one in pieces:
        out.append([(c, (n + k) in hit) for k, c in enumerate(one)])
        n += len(one)
    return out


__all__ = ["Feature", "carries", "clauses", "features", "find", "fingerprint", "held_elsewhere",
           "keyed", "keyed_probes", "probes", "split", "tenant_key", "tenant_keys", "zipf"]
