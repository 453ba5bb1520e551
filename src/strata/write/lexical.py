"""A statement's lexical normal form: the key under which two wordings of one fact meet.

"I'm allergic to peanuts" and "The user has a peanut allergy" are one fact; a sentence model
scores them 0.82–0.90 and feature hashing 0.25–0.36, so similarity alone either needs a
judge to recognise them or never shows them to one. ``normal_form`` makes them equal by
rules any English statement goes through, with no list of known sentences:

- casefold, Unicode compatibility forms, contractions expanded ("don't" → "do not", "I'm"
  → "I am", "it's" → "it is"; a possessive "'s" is dropped), lexicon aliases folded
  ("Postgres" → "postgresql", :mod:`.values`);
- number words become digits ("two" → ``2``, "twenty-five" → ``25``, "1,000" → ``1000``);
- words are lemmatised (simplemma's English dictionary, shipped in its wheel): plurals and
  the third person fold freely ("peanuts" → ``peanut``, "likes" → ``like``), and so does
  "-ing" ("I like hiking" = "I like to hike"); any other inflection keeps a marker of what
  it was, so tense and degree stay apart: "lived" → ``live ~past``, "better" → ``good ~er``
  ("I lived in Lisbon" is not "I live in Lisbon");
- a derivational rule, checked against the dictionary rather than listed: an adjective in
  -ic/-ical whose -y noun the dictionary knows (with a plural) becomes that noun, and "be
  X-ic" is read as "have X-y" ("allergic" → ``allergy`` + ``have``; also economic/economy,
  strategic/strategy, historic/history); British spellings become American when the American
  form is a known word (colour/color, favourite/favorite, organise/organize, centre/center);
- the subject ("I", "the user", "they", "their", ...), articles, the copula "be", the
  auxiliary "do", "to", "of", "and" and a few fillers ("really", "just", "now", "please")
  are dropped; every other word stays — prepositions ("in" vs "near" Lisbon), negations
  ("not", "no", "never", "longer", "anymore"), modals, numbers;
- the words left are sorted and deduplicated, so word order does not matter.

What it must not merge (tests/test_slots_lexical.py holds each as a control): "I use vim" /
"I use emacs", "I have a dog" / "I have two dogs", "I live in Lisbon" / "I lived in
Lisbon", "I like tea" / "I don't like tea", "I'm from Lisbon" / "I'm in Lisbon".

``lexical_key`` is the hash the write path stores beside each memory (table
``memory_lexical_keys``, migration 0012) so the gate finds a lexical twin whatever the
embedder says. It is versioned: a change to these rules changes the prefix, so an old key
never equals a new one (a miss, never a false match; the gate also re-checks the text).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from functools import lru_cache

from strata.write.values import fold_aliases

VERSION = "lex1"

# Dropped wherever they stand: the subject (first person, "the user", the extractor's
# "they/their"), articles, argument-marking prepositions and fillers a paraphrase adds or
# drops freely. Content prepositions (in, at, from, near, with, for, ...) stay.
FUNCTION_WORDS = frozenset(
    "i me my mine myself user they them their theirs themselves themself "
    "a an the to of and "
    "really very just also too so now currently actually please".split()
)
# Lemmas dropped after lemmatising (their inflection markers stay): the copula and the
# auxiliary "do" ("I do like tea" = "I like tea"; "I did" keeps ~past).
_DROPPED_LEMMAS = frozenset({"be", "do"})
NEGATIONS = frozenset({"not", "no", "never", "longer", "anymore", "nobody", "nothing",
                       "none", "neither", "nor", "without"})
# Present forms of "be" the dictionary maps to "be" without an "-s": not a past.
_PRESENT_BE = frozenset({"am", "are", "is", "'m", "'re"})

_UNITS = {w: n for n, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * n for n, w in enumerate(
    "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if w != "_"}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9}

_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})
_CONTRACTIONS = [
    (re.compile(r"\bcan't\b|\bcannot\b"), "can not"),
    (re.compile(r"\bwon't\b"), "will not"),
    (re.compile(r"\bshan't\b"), "shall not"),
    (re.compile(r"\bain't\b"), "is not"),
    (re.compile(r"n't\b"), " not"),
    (re.compile(r"'m\b"), " am"),
    (re.compile(r"'re\b"), " are"),
    (re.compile(r"'ve\b"), " have"),
    (re.compile(r"'ll\b"), " will"),
    (re.compile(r"'d\b"), " would"),
    (re.compile(r"\blet's\b"), "let us"),
    (re.compile(r"\b(it|that|this|there|here|what|who|where|how|he|she)'s\b"), r"\1 is"),
    (re.compile(r"'s\b"), ""),  # a possessive: "the user's dog" = "their dog"
    (re.compile(r"s'(?=\s|$)"), "s"),
    (re.compile(r"\bany\s+(?:more|longer)\b"), "anymore"),
]
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_TOKEN = re.compile(r"\d+(?:\.\d+)+|[^\W_]+[+#]*")

# -ic/-ical adjectives the -y rule would give a noun they do not share a meaning with
# (found by running the rule over the dictionary: tests/test_slots_lexical.py).
_NOT_DERIVED = frozenset({"colonic", "levitical", "politic", "political", "trophic",
                          "monotonic"})
_ADJECTIVE = re.compile(r"^([a-z]{5,})(?:ical|ic)$")
_SPELLING = [
    (re.compile(r"^([a-z]{2,})our(|ite|able|ably|ful|less|ous|y|ism|ist|hood|ly|ation|ise|ize)$"),
     r"\1or\2"),
    (re.compile(r"^([a-z]{3,})is(e|ation|er)$"), r"\1iz\2"),
    (re.compile(r"^([a-z]{2,})ys(e|er)$"), r"\1yz\2"),
    (re.compile(r"^([a-z]{2,})tre$"), r"\1ter"),
]


# simplemma is imported on first use: its import is 0.1 s of a cold start, which functions
# that never write should not pay. low_memory: its compact dictionary (3 MB resident, not 25).
def _known(word: str) -> bool:
    import simplemma

    return simplemma.is_known(word, lang="en", low_memory=True)


@lru_cache(maxsize=65536)
def _lemma(word: str) -> str:
    import simplemma

    return simplemma.lemmatize(word, lang="en", low_memory=True).casefold()


@lru_cache(maxsize=65536)
def derived_noun(lemma: str) -> str | None:
    """The -y noun an -ic/-ical adjective names ("allergic" → "allergy"), when the
    dictionary knows the noun and its plural, and it is not an -ify verb."""
    m = _ADJECTIVE.match(lemma)
    if m is None or lemma in _NOT_DERIVED:
        return None
    noun = m.group(1) + "y"
    if noun.endswith("ify") or not (_known(noun) and _known(m.group(1) + "ies")):
        return None
    return noun


@lru_cache(maxsize=65536)
def american(lemma: str) -> str:
    """The American spelling of a British one, when the dictionary knows it."""
    for pattern, repl in _SPELLING:
        if pattern.match(lemma):
            other = pattern.sub(repl, lemma)
            if other != lemma and _known(other):
                return other
    return lemma


def _inflection(word: str, lemma: str) -> str | None:
    """The marker an inflection keeps: None for the ones that fold freely (plural, third
    person, "-ing", the present of "be"), else past or degree."""
    if lemma == word or word in _PRESENT_BE:
        return None
    if word.endswith("s") or word.endswith("ing"):
        return None
    if word.endswith("est"):
        return "~est"
    if word.endswith("er"):
        return "~er"
    return "~past"


def _numbers(words: list[str]) -> list[str]:
    """Runs of number words as one number in digits ("twenty five" → "25", "two hundred
    and five" → "205"); two numbers side by side stay two ("five twenty" → "5 20")."""
    out: list[str] = []
    total = current = 0
    run = False

    def flush() -> None:
        nonlocal total, current, run
        if run:
            out.append(str(total + current))
        total = current = 0
        run = False

    for w in words:
        n = _UNITS.get(w, _TENS.get(w))
        if n is not None:
            joins = run and (
                (w in _UNITS and n < 10 and current % 100 >= 20 and current % 10 == 0)
                or (current > 0 and current % 100 == 0) or (total > 0 and current == 0))
            if run and not joins:
                flush()
            current += n
            run = True
        elif w in _SCALES and run:
            if _SCALES[w] == 100:
                current = (current or 1) * 100
            else:
                total, current = total + (current or 1) * _SCALES[w], 0
        else:
            flush()
            out.append(w)
    flush()
    return out


def _prepare(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold().translate(_QUOTES)
    text = fold_aliases(text)
    for pattern, repl in _CONTRACTIONS:
        text = pattern.sub(repl, text)
    return _THOUSANDS.sub("", text)


@lru_cache(maxsize=8192)
def tokens(text: str) -> frozenset[str]:
    """The content words of ``text`` in normal form (see the module docstring)."""
    words = _numbers([w for w in _TOKEN.findall(_prepare(text)) if w not in FUNCTION_WORDS])
    out: set[str] = set()
    adjective = False
    for word in words:
        if word[0].isdigit() or not word.isalpha() or word in NEGATIONS:
            out.add(word)
            continue
        lemma = _lemma(word)
        marker = _inflection(word, lemma)
        if marker:
            out.add(marker)
        if lemma in _DROPPED_LEMMAS or lemma in FUNCTION_WORDS:
            continue
        noun = derived_noun(lemma)
        if noun is not None:
            lemma, adjective = noun, True
        out.add(american(lemma))
    if adjective:
        out.add("have")  # "be X-ic" = "have X-y"
    return frozenset(out)


def normal_form(text: str) -> str:
    """A canonical lexical key of ``text``: its normal-form words, sorted, space-joined
    ("" when nothing but function words is left)."""
    return " ".join(sorted(tokens(text)))


def lexical_key(text: str) -> bytes | None:
    """The stored hash of ``normal_form(text)``; None when the normal form is empty (a
    statement of function words only has no lexical twin)."""
    form = normal_form(text)
    if not form:
        return None
    return hashlib.sha256(f"{VERSION}:{form}".encode()).digest()


def negated(text: str) -> bool:
    return bool(tokens(text) & NEGATIONS)


def without_negation(text: str) -> frozenset[str]:
    return tokens(text) - NEGATIONS


def same_statement(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` say one thing in other words (equal, non-empty normal forms)."""
    ta = tokens(a)
    return bool(ta) and ta == tokens(b)
