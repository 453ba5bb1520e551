"""Rule-based extractor: memories from what the user says, without a model.

The local default when no model is configured, and the fallback when the model fails or
returns garbage. Pure Python (``re`` + ``datetime``), deterministic, no I/O.

What is mined
    Only ``user`` messages. Assistant, system and tool messages are context, never facts
    about the user. Each message is cut into sentences and the sentences into clauses (at
    "but", at " - ", and at ", I ..." / "and I ..." when a first-person clause is already on
    the left); one message can yield several candidates, one per clause at most. A message's
    time is ``message.at or now``; ``evidence`` is ``[index of the message]``.

Conventions
    content
        One standalone statement in the third person, keeping the user's wording: "I've
        switched to Postgres" → "The user has switched to Postgres"; "my name is Sam" →
        "The user's name is Sam" (later "I"/"my" in the same clause become "they"/"their").
        This is the wording the model extractor is asked for, so the two agree on canonical
        text. Instructions stay imperative as written ("Always answer in French", with
        "please" dropped). Events carry their date in absolute form ("The user met Sam on
        2026-05-12", "... in the week of 2026-05-18"); other kinds carry it only in
        ``valid_from``. No trailing full stop.
    slot / value
        ``value`` is set exactly when ``slot`` is, except for negations (below). Values are
        lowercase with aliases folded (``normalize_value``: "Postgres" → "postgresql").
        A tech/drink term from ``LEXICON`` decides ``user.preferred_<category>`` (database,
        editor, language, os, mobile_os, cloud, browser, shell, drink), whichever verb
        introduced it — "I use vim", "I've switched to emacs", "my favourite editor is
        Sublime" share ``user.preferred_editor``. An object naming no known term, or two
        (e.g. "Python and Rust"), gets no slot. Other slots: ``user.favorite_<noun>`` ("my
        favourite colour is blue"; color→colour), ``user.name``, ``user.preferred_name``
        ("call me Sam"), ``user.location``, ``user.employer``, ``user.occupation``,
        ``user.age``, ``user.diet``, ``user.<x>`` for "my X is Y" (snake_case). Allergies,
        pets, family, habits and events are multi-valued: no slot.
    negation
        "I no longer use MongoDB", "I don't use MongoDB anymore", "not MongoDB anymore",
        "I stopped using MongoDB": ``slot`` = the slot the positive statement would have,
        ``value = None``, ``asserts_change = True``, and ``content`` states the negation
        ("The user no longer uses MongoDB"). A slot with no value means "this slot's holder
        named in the content is no longer true" — NOT "a different value": it must retire
        only the memory whose value it names, which ``negates(candidate, value)`` decides.
        Plain dislikes without a change ("I don't like tea", "I hate Java") are slotless
        preferences, so they never retire a slot's current holder.
    asserts_change
        Set by explicit change words: "actually", "correction", "update:", "no," (contradicting
        the agent), "I meant", "scratch that", "changed my mind", "now I use" / "I now use" /
        "... now" / "... instead", "from now on I ...", "switched (back) to", "moved to",
        "gone back to", "back on", "started using", and every negation with "no longer",
        "anymore", "stopped". A correction word standing alone ("I changed my mind. I prefer
        tea.") flags the statements after it in the same message; nothing carries over to
        the next message.
    confidence
        0.85–0.9 for explicit forms (prefer, favourite, switched, my name is, I live in),
        0.75 for weaker ones (like/love/use, events, dislikes), 0.7 for "my X is Y", habits
        and "I'd prefer"; hedges ("I think", "maybe", "probably") take 0.15 off.

What is not mined (each clause, not the whole message, is dropped)
    Questions (a sentence ending in "?", or starting with do/does/is/can/what/...);
    hypotheticals (a sentence starting with if/suppose/imagine/what if/hypothetically/let's
    say/I wish/I wonder, or a clause containing "if"/"unless"); the past and reported
    speech ("I used to prefer X", "back when I said I prefer MongoDB I was young", "when I
    was young ...", "I said/told you ...") — they say nothing about what is true now, so a
    retired value mentioned in passing is not re-extracted; quotations (a clause opening
    with a quote mark, lines starting with ">", code blocks); other people's preferences
    ("my wife prefers tea": not about the user, and a slot like ``user.preferred_drink``
    would be wrong); pronoun or anaphoric objects ("I like it", "I prefer your first
    option"); small talk ("I'm tired today", "never mind").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from strata.ingest.dates import PAST_IRREGULAR, DateMatch, find_date, guess_tense, render
from strata.ingest.models import Candidate, Extraction, Message
from strata.write.canonical import canonicalize
# The value vocabulary (lexicon, aliases, value normalisation, negation) is the write path's:
# the extractor, the gate and the conflict judge share one copy.
from strata.write.values import (
    _ALIAS_RE, _EDGE, _NOUN_SPELLING, ALIASES, CATEGORY, CATEGORY_NOUNS, LEXICON, _squash,
    fold_aliases, lexicon_terms, negates, normalize_value,
)

# ---------------------------------------------------------------------------------------
# third-person rewriting
# ---------------------------------------------------------------------------------------

_ADVERBS = (
    r"also|really|still|now|usually|always|never|often|sometimes|just|actually|definitely|"
    r"mostly|mainly|generally|currently|totally|absolutely|honestly|personally|finally|"
    r"recently|truly|strongly|normally|typically|primarily|rarely|seldom|no\s+longer|even|"
    r"already|only|sort\s+of|kind\s+of|much|rather|kinda|occasionally|regularly|"
    r"exclusively|happily|officially|probably|certainly|not|then"
)
_MODALS = frozenset("can cannot could will would shall should may might must".split())
_NOT_VERBS = frozenset(
    "and or but nor too also myself alone then so as at in on to for with the a an not no "
    "who that which when if".split()
)

_PRONOUNS = re.compile(
    rf"\b(?:(?P<i>i)(?![./'\-]\w)\b(?P<adv>(?:\s+(?:{_ADVERBS}))*)(?:\s+(?P<verb>[a-z]+)\b)?"
    rf"|(?P<we>we)\b(?P<wadv>(?:\s+(?:{_ADVERBS}))*)(?:\s+(?P<wverb>[a-z]+)\b)?"
    r"|(?P<my>my|our)\b|(?P<me>me|us)\b|(?P<mine>mine|ours)\b|(?P<myself>myself|ourselves)\b)",
    re.I,
)


def _past(word: str) -> bool:
    return word in PAST_IRREGULAR or (word.endswith("ed") and not word.endswith("eed"))


def _third_singular(verb: str) -> str:
    low = verb.lower()
    special = {"am": "is", "are": "is", "have": "has", "do": "does", "go": "goes", "be": "is",
               "were": "was"}
    if low in special:
        return special[low]
    if low in _MODALS or low in _NOT_VERBS or _past(low) or low.endswith("ing"):
        return verb
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def _plural(verb: str) -> str:
    return {"am": "are", "was": "were", "is": "are", "has": "have"}.get(verb.lower(), verb)


def third_person(text: str) -> str:
    """``text`` (contractions expanded) about the user in the third person: the first
    reference is "the user"/"the user's", later ones "they"/"their"/"them"."""
    seen = False

    def subject() -> str:
        nonlocal seen
        word = "they" if seen else "the user"
        seen = True
        return word

    def swap(m: re.Match[str]) -> str:
        nonlocal seen
        if m["i"] is not None or m["we"] is not None:
            singular = m["i"] is not None and not seen
            if m["i"] is not None:
                who = subject()
            else:
                who = "they" if seen else "the user and others"
            seen = True
            adv = m["adv"] if m["i"] is not None else m["wadv"]
            verb = m["verb"] if m["i"] is not None else m["wverb"]
            if verb is None:
                return who + (adv or "")
            verb = _third_singular(verb) if singular else _plural(verb)
            return f"{who}{adv or ''} {verb}"
        if m["my"] is not None:
            word = "their" if seen else "the user's"
            seen = True
            return word
        if m["me"] is not None:
            if m["me"] == "US":  # the country
                return m["me"]
            word = "them" if seen else "the user"
            seen = True
            return word
        if m["mine"] is not None:
            return "theirs" if seen else "the user's"
        return "themselves"

    out = _PRONOUNS.sub(swap, text)
    out = _squash(out)
    return out[:1].upper() + out[1:]


# ---------------------------------------------------------------------------------------
# text preparation
# ---------------------------------------------------------------------------------------

_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "`": ""})
_CODE = re.compile(r"```.*?```", re.S)
_ABBREVIATIONS = frozenset(
    "dr mr mrs ms st vs e.g i.e etc jr sr prof no approx inc ltd co mt ft fig cf".split()
)
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)|\n+|;\s+")


def _clean(text: str) -> str:
    text = _CODE.sub("\n", unicodedata.normalize("NFKC", text))
    text = text.translate(_QUOTES)
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(">"))


def _sentences(text: str) -> list[str]:
    parts, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        if m.group() == ".":
            word = re.search(r"([\w.]+)$", text[start:m.start()])
            if word and word.group(1).lower() in _ABBREVIATIONS:
                continue
        end = m.end() if m.group()[0] in ".!?" else m.start()
        parts.append(text[start:end].strip())
        start = m.end()
    parts.append(text[start:].strip())
    return [p for p in parts if p]


_SUBORDINATE = re.compile(
    r"^(?:if|when|whenever|because|although|though|since|while|as|after|before|once|unless|"
    r"back\s+when|even\s+if|even\s+though|until)\b", re.I,
)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|my|me|we|our|us)\b", re.I)
_BUT = re.compile(r",?\s+but\s+|\s+[-–—]+\s+", re.I)
_NEW_CLAUSE = re.compile(
    r",\s+(?:and\s+|so\s+)?(?=(?:i|i'm|i've|my|we)\b)|\s+and\s+(?=(?:i|i'm|i've|my)\b)", re.I,
)


def _clauses(sentence: str) -> list[str]:
    out = []
    for piece in _BUT.split(sentence):
        start = 0
        for m in _NEW_CLAUSE.finditer(piece):
            left = piece[start:m.start()]
            if _FIRST_PERSON.search(left) and not _SUBORDINATE.match(left.strip()):
                out.append(left)
                start = m.end()
        out.append(piece[start:])
    return [c.strip(" \t,;:-") for c in out if c.strip(" \t,;:-")]


_CONTRACTIONS = [
    (re.compile(r"\bi'm\b|\bim\b(?=\s)", re.I), "I am"),
    (re.compile(r"\bi've\b|\bive\b(?=\s)", re.I), "I have"),
    (re.compile(r"\bi'll\b", re.I), "I will"),
    (re.compile(r"\bwe're\b", re.I), "we are"),
    (re.compile(r"\bwe've\b", re.I), "we have"),
    (re.compile(r"\bwe'll\b", re.I), "we will"),
    (re.compile(r"\bcan't\b", re.I), "cannot"),
    (re.compile(r"\bwon't\b", re.I), "will not"),
    (re.compile(r"\b(do|does|did|is|are|was|were|have|has|had|would|should|could)n't\b", re.I),
     r"\1 not"),
    (re.compile(r"\b(dont|doesnt|didnt)\b", re.I), lambda m: m.group()[:-2] + " not"),
    (re.compile(r"\bname's\b", re.I), "name is"),
]
_I_D = re.compile(r"\b(i|we)'d\s+(\w+)", re.I)


def _expand(text: str) -> str:
    text = _I_D.sub(
        lambda m: f"{m[1]} {'had' if _past(m[2].lower()) else 'would'} {m[2]}", text
    )
    for pattern, repl in _CONTRACTIONS:
        text = pattern.sub(repl, text)
    return _squash(text)


# ---------------------------------------------------------------------------------------
# lead-ins, questions, hypotheticals
# ---------------------------------------------------------------------------------------

_SEP = r"[\s,:;.!\-–—]*"
_LEADS: list[tuple[re.Pattern[str], str | None]] = [
    (re.compile(
        r"^(?:actually|correction|update|no\s+wait|wait|oops|scratch\s+that|"
        r"(?:sorry,?\s+)?i\s+meant(?:\s+to\s+say)?|let\s+me\s+correct\s+(?:that|myself)|"
        r"to\s+correct\s+myself|change\s+of\s+plans?|"
        r"(?:i(?:'ve|\s+have)?\s+)?changed\s+my\s+mind(?:\s+about\s+[^,:;]+)?|"
        r"(?:i(?:'ve|\s+have)?\s+)?made\s+a\s+mistake(?:\s+earlier)?)\b" + _SEP, re.I), "marker"),
    (re.compile(r"^(?:no|nope|nah)\s*[,!.;:\-–—]+\s*", re.I), "change"),
    (re.compile(r"^(?:and\s+)?now,?\s+(?!that\b)(?=\w)", re.I), "change"),
    (re.compile(
        r"^(?:from\s+now\s+on|going\s+forward|moving\s+forward|starting\s+(?:now|today))"
        r"[\s,:;\-–—]+(?=(?:i|i'm|i've|i'll|my|we)\b)", re.I), "change"),
    (re.compile(
        r"^(?:i\s+think|i\s+guess|i\s+believe|i\s+suppose|probably|maybe|perhaps)"
        r"(?:\s+that)?\b" + _SEP, re.I), "hedge"),
    (re.compile(
        r"^(?:and|so|but|also|plus|well|ok|okay|oh|yeah|yes|yep|sure|hey|hi|hello|btw|"
        r"by\s+the\s+way|honestly|personally|frankly|basically|anyway|anyways|fyi|"
        r"just\s+so\s+you\s+know|for\s+the\s+record|(?:please\s+)?remember\s+that|"
        r"(?:please\s+)?note\s+that|keep\s+in\s+mind\s+that|as\s+i\s+(?:said|mentioned|told\s+you)"
        r"(?:\s+(?:before|earlier))?|like\s+i\s+said|to\s+be\s+honest|tbh|these\s+days|"
        r"nowadays|currently|lately|at\s+the\s+moment|right\s+now|thanks|thank\s+you|"
        r"good\s+news|fun\s+fact|in\s+fact)\b" + _SEP, re.I), None),
]
_COMMA_LEAD = re.compile(r"^(?P<lead>[^,]{1,40}),\s+(?=(?:i|i'm|i've|my)\b)", re.I)
_COMMA_LEAD_BLOCK = re.compile(
    r"\b(?:i|me|my|we|our|us|if|when|unless|because|although|though|since|while|whenever|back|"
    r"suppose|supposing|imagine|pretend|assuming|hypothetically|theoretically|ideally|theory|"
    r"would|could|might|said|told|used)\b", re.I,
)


_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass
class _Lead:
    text: str
    change: bool = False
    hedge: bool = False
    marker: bool = False  # an explicit correction word ("actually", "changed my mind")
    context: str = ""  # a qualifying phrase set off by a comma ("For backends, ...")


def _strip_leads(text: str) -> _Lead:
    lead = _Lead(text.strip(_EDGE.replace("'", "").replace('"', "")))
    for _ in range(8):
        before = lead.text
        for pattern, flag in _LEADS:
            m = pattern.match(lead.text)
            if m and m.end() > 0:
                lead.text = lead.text[m.end():].strip(" \t,;:")
                lead.change |= flag in ("change", "marker")
                lead.hedge |= flag == "hedge"
                lead.marker |= flag == "marker"
        m = _COMMA_LEAD.match(lead.text)
        # A date is not filler: "Yesterday, I switched ..." keeps its "Yesterday".
        if m and not _COMMA_LEAD_BLOCK.search(m["lead"]) and find_date(m["lead"], _EPOCH) is None:
            lead.text = lead.text[m.end():]
            lead.context = _squash(f"{lead.context}, {m['lead']}" if lead.context else m["lead"])
        if lead.text == before:
            break
    return lead


_QUESTION_START = re.compile(
    r"^(?:(?:do|does|did)(?!n't)\s+(?!not\b)|(?:am|is|are|was|were|can|could|would|should|"
    r"will|shall|have|has|what|which|who|whom|whose|where|why|how|isn't|aren't|wasn't|"
    r"don't\s+(?:i|you)|didn't|doesn't)\b)", re.I,
)
_HYPOTHETICAL_START = re.compile(
    r"^(?:if|suppose|supposing|imagine|hypothetically|let'?s\s+say|say\s+(?:i|we)|pretend|"
    r"assuming|assume|what\s+if|in\s+case|even\s+if|unless|would|wouldn't|i\s+wish|"
    r"i\s+wonder|wish|in\s+theory|theoretically|in\s+an?\s+ideal\s+world)\b", re.I,
)
_NOT_NOW = re.compile(
    r"^(?:when|whenever|back\s+(?:when|then|in)|in\s+the\s+past|as\s+a\s+(?:kid|child|student)|"
    r"years\s+ago|i\s+used\s+to|we\s+used\s+to|used\s+to|i\s+(?:once|previously|originally)|"
    r"before\s+that|i\s+(?:said|told|mentioned|thought|claimed|wrote)|"
    r"(?:you|he|she|they|someone|somebody|people)\s+(?:said|say|told|think|thought))\b", re.I,
)
_CONDITIONAL = re.compile(r"\b(?:if|unless|in\s+case)\b", re.I)
_REPORTED = re.compile(r"\b(?:said|told\s+you|mentioned|claimed|wrote)\b", re.I)


# ---------------------------------------------------------------------------------------
# instructions
# ---------------------------------------------------------------------------------------

_INSTRUCTION_VERBS = (
    r"use|include|add|call|mention|reply|respond|answer|write|send|suggest|recommend|show|"
    r"format|put|say|ask|remind|give|apologi[sz]e|explain|summari[sz]e|translate|share|store|"
    r"contact|email|schedule|book|cc|commit|push|deploy|delete|remove|change|edit|run|"
    r"assume|guess|make|sign|start|end|open|close|post|text|message|ping"
)
_INSTRUCTION = [
    re.compile(r"^(?:please\s+)?(?:always|never(?:\s+ever)?)\b(?!\s+mind\b)\s+\S+\s+\S+", re.I),
    re.compile(r"^(?:please\s+)?(?:don't|do\s+not)\s+ever\b\s+\S+", re.I),
    re.compile(r"^please\s+(?:don't|do\s+not)\s+\S+", re.I),
    re.compile(rf"^(?:don't|do\s+not)\s+(?:{_INSTRUCTION_VERBS})\b", re.I),
]
_FROM_NOW_ON = re.compile(
    r"^(?:from\s+now\s+on|going\s+forward|moving\s+forward|in\s+(?:the\s+)?future|"
    r"starting\s+(?:now|today))\b[\s,:;\-–—]*(?P<rest>.+)$", re.I,
)
_WANT_YOU_TO = re.compile(
    r"^(?:i\s+want\s+you\s+to|i'?d\s+like\s+you\s+to|i\s+would\s+like\s+you\s+to|"
    r"i\s+need\s+you\s+to|(?:please\s+)?(?:remember|make\s+sure|be\s+sure)(?:\s+to|\s+you)?)\s+"
    r"(?P<rest>(?:always|never)\b.+)$", re.I,
)
_PLEASE = re.compile(r"\bplease\b[\s,]*", re.I)


def _imperative(text: str) -> str:
    text = _squash(_PLEASE.sub("", text))
    return text[:1].upper() + text[1:]


def _instruction(text: str) -> str | None:
    """The imperative content if ``text`` is a standing instruction to the agent."""
    m = _WANT_YOU_TO.match(text)
    if m:
        return _imperative(m["rest"])
    if any(p.match(text) for p in _INSTRUCTION):
        return _imperative(text)
    m = _FROM_NOW_ON.match(text)
    if m and not _FIRST_PERSON.match(m["rest"]):
        return _imperative(text)
    return None


# ---------------------------------------------------------------------------------------
# statements
# ---------------------------------------------------------------------------------------

# Adverbs allowed between "I" and a positive verb: not the negating ones.
_POSITIVE_ADVERBS = "|".join(
    a for a in _ADVERBS.split("|") if a not in ("no\\s+longer", "not", "never")
)
_A = rf"(?:(?:{_POSITIVE_ADVERBS})\s+)*"
_TRAILING = re.compile(
    r"(?:[\s,]+(?:any\s?more|any\s+longer|these\s+days|nowadays|now|for\s+now|at\s+the\s+moment|"
    r"currently|too|as\s+well|instead|again|actually|though|personally|honestly|a\s+lot|"
    r"very\s+much|so\s+much|the\s+most|mostly|exclusively|really|daily|every\s+day|lately|"
    r"full[- ]time|myself|by\s+far|for\s+good))+$", re.I,
)
_CHANGE_TAIL = re.compile(r"\b(?:now|instead|for\s+good|these\s+days)\s*$", re.I)
_CUT = re.compile(
    r"\s+(?:over|to|rather\s+than|instead\s+of|than|vs\.?|versus|for|because|since|as|when|"
    r"with|in|on|at|but|so|which|that|where|while|if|from|by|via|and\s+not|every|during)\b|[,(]",
    re.I,
)
_STOP_OBJECTS = re.compile(
    r"^(?:it|that|this|these|those|them|him|her|you|yours|your\b.*|you\b.*|it\b.*|this\s+one|"
    r"that\s+one|one|both|either|neither|the\s+(?:idea|first|second|third|last|other|former|"
    r"latter|same|one|option|approach|suggestion|answer|plan|version)\b.*|option\b.*|"
    r"what\s+you\b.*|how\s+you\b.*|the\s+way\s+you\b.*|track|a\s+lot|so|too|lots|"
    r"everything|nothing|something|anything|all\s+of\s+(?:it|them)|"
    r"(?:a|an|the)\s+(?:bit|little|lot)\b.*)$", re.I,
)


def _clean_object(obj: str) -> tuple[str, bool]:
    """The object without trailing fillers, and whether a filler marked a change ("now")."""
    obj = _squash(obj)
    change = bool(_CHANGE_TAIL.search(obj))
    return _squash(_TRAILING.sub("", obj)), change


def _head(obj: str) -> str:
    m = _CUT.search(obj)
    return _squash(obj[:m.start()] if m else obj)


def _is_stop_object(obj: str) -> bool:
    return not obj or bool(_STOP_OBJECTS.match(_squash(obj)))


def preference_slot(obj: str) -> tuple[str | None, str | None]:
    """``(user.preferred_<category>, canonical term)`` when the object's head names exactly
    one lexicon term, else ``(None, None)``."""
    if re.match(r"^to\s", obj, re.I):
        return None, None
    head = _head(obj)
    canonicals = {t.canonical for t in lexicon_terms(head)}
    mentioned = {ALIASES[m.group().lower()] for m in _ALIAS_RE.finditer(head)}
    if len(canonicals) != 1 or len(mentioned) > 1:
        # Nothing known, or several things named at once ("Python and Rust"): no single value.
        return None, None
    canonical = canonicals.pop()
    return f"user.preferred_{CATEGORY[canonical]}", canonical


@dataclass
class _Found:
    content: str
    kind: str
    slot: str | None = None
    value: str | None = None
    confidence: float = 0.8
    change: bool = False


@dataclass
class _Result(_Found):
    valid_from: datetime | None = None
    valid_to: datetime | None = None  # a state the user says has ended


_Handler = Callable[[re.Match[str], str], "_Found | None"]


def _snake(text: str) -> str:
    text = re.sub(r"'s\b", "", text.lower())
    words = [_NOUN_SPELLING.get(w, w) for w in re.findall(r"[a-z0-9]+", text)]
    return "_".join(words)


def _value_of(text: str, cut: re.Pattern[str] | None = None) -> str | None:
    text, _ = _clean_object(text)
    if cut is not None:
        m = cut.search(text)
        text = text[:m.start()] if m else text
    return normalize_value(text)


_NUMBER_WORDS = {
    w: i for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen".split())
}
_TENS = {
    w: 10 * (i + 2)
    for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())
}
_UNITS = "|".join(list(_NUMBER_WORDS)[1:10])
_NUMBER = rf"\d{{1,3}}|(?:{'|'.join(_TENS)})(?:[\s-](?:{_UNITS}))?|{'|'.join(_NUMBER_WORDS)}"


def _parse_number(text: str) -> int:
    text = text.lower()
    if text.isdigit():
        return int(text)
    parts = re.split(r"[\s-]+", text)
    total = _TENS.get(parts[0], _NUMBER_WORDS.get(parts[0], 0))
    return total + (_NUMBER_WORDS.get(parts[1], 0) if len(parts) > 1 else 0)


# -- negations ------------------------------------------------------------------------------

_NEG_VERB = (
    r"use|using|like|love|enjoy|prefer|drink|drinking|eat|eating|live\s+in|living\s+in|"
    r"work\s+(?:at|for)|working\s+(?:at|for)|a|an|into|on"
)


def _negation(m: re.Match[str], clause: str) -> _Found | None:
    verb = _squash(m.groupdict().get("verb") or "use").lower()
    obj, _ = _clean_object(m["obj"])
    if _is_stop_object(obj):
        return None
    slot: str | None
    if verb.startswith("liv"):
        slot = "user.location"
    elif verb.startswith("work"):
        slot = "user.employer"
    elif verb in ("a", "an"):
        slot = "user.occupation" if _is_role(obj) else None
    else:
        slot, _ = preference_slot(obj)
        if slot is None and m.groupdict().get("verb") is None:
            return None
    kind = "fact" if slot in ("user.location", "user.employer", "user.occupation") else "preference"
    content = third_person(clause)
    if not re.match(r"^(?:the\s+user|they)\b", content, re.I):
        verb = "drinks" if slot == "user.preferred_drink" else "uses"
        content = f"The user no longer {verb} {obj}"
    return _Found(content, kind, slot, None, 0.8, change=True)


def _dislike(m: re.Match[str], clause: str) -> _Found | None:
    obj, _ = _clean_object(m["obj"])
    if _is_stop_object(obj):
        return None
    return _Found(third_person(clause), "preference", None, None, 0.75)


# -- preferences ----------------------------------------------------------------------------


def _preference(confidence: float, change: bool = False, need_term: bool = False) -> _Handler:
    def handle(m: re.Match[str], clause: str) -> _Found | None:
        obj, tail_change = _clean_object(m["obj"])
        if _is_stop_object(obj) or _is_stop_object(_head(obj)):
            return None
        slot, value = preference_slot(obj)
        if slot is None and (need_term or len(obj.split()) > 12):
            return None
        return _Found(third_person(clause), "preference", slot, value, confidence,
                      change=change or tail_change)

    return handle


def _moved(m: re.Match[str], clause: str) -> _Found | None:
    obj, _ = _clean_object(m["obj"])
    if _is_stop_object(obj):
        return None
    slot, value = preference_slot(obj)
    if slot is not None:
        return _Found(third_person(clause), "preference", slot, value, 0.85, change=True)
    if m["verb"].lower() in ("moved", "relocated"):
        place = _value_of(obj, _PLACE_CUT)
        if place and not re.match(r"^(?:a|an)\s", obj, re.I):
            return _Found(third_person(clause), "fact", "user.location", place, 0.85, change=True)
        return None
    return _Found(third_person(clause), "preference", None, None, 0.75, change=True)


def _favourite(m: re.Match[str], clause: str) -> _Found | None:
    obj, _ = _clean_object(m["obj"])
    if _is_stop_object(obj):
        return None
    noun = _squash((m.groupdict().get("noun") or "").lower())
    slot, value = preference_slot(obj)
    if slot is None and noun in CATEGORY_NOUNS:
        slot, value = f"user.preferred_{CATEGORY_NOUNS[noun]}", normalize_value(_head(obj))
    elif slot is None and noun and not (noun.endswith("s") and not noun.endswith("ss")):
        slot, value = f"user.favorite_{_snake(noun)}", normalize_value(obj)
    return _Found(third_person(clause), "preference", slot, value if slot else None, 0.85)


# -- facts ----------------------------------------------------------------------------------

_ROLES = frozenset(
    "engineer developer programmer designer teacher doctor nurse student manager scientist "
    "analyst writer lawyer consultant architect researcher accountant artist chef founder "
    "cofounder co-founder ceo cto cfo coo vp director intern administrator admin sre devops "
    "professor lecturer freelancer contractor musician photographer journalist pharmacist "
    "dentist physician surgeon therapist psychologist translator tester lead officer "
    "specialist technician mechanic electrician plumber carpenter farmer pilot driver "
    "salesperson marketer recruiter entrepreneur economist mathematician physicist chemist "
    "biologist statistician librarian veterinarian vet paramedic firefighter soldier retiree "
    "tutor coach owner editor producer actor actress dancer singer barista waiter waitress "
    "cashier clerk secretary assistant banker trader investor ux pm phd postdoc".split()
)
_ROLE_CUT = re.compile(r"\s+(?:at|for|in|with|who|and|by|from|of|since|on)\b|,", re.I)
_PLACE_CUT = re.compile(
    r"\s+(?:with|since|for|because|and|but|where|which|near|now|these\s+days|at\s+the\s+moment|"
    r"currently|to|as)\b", re.I,
)
_ORG_CUT = re.compile(r"\s+(?:as|since|in|on|and|but|where|which|for|now|doing)\b|,", re.I)


def _is_role(phrase: str) -> bool:
    head = _squash(_ROLE_CUT.split(phrase)[0]).lower()
    words = head.split()
    return bool(words) and len(words) <= 4 and words[-1] in _ROLES


def _fact(slot: str | None, confidence: float, cut: re.Pattern[str] | None = None,
          change: bool = False, group: str = "v", kind: str = "fact",
          check: Callable[[str], bool] | None = None) -> _Handler:
    def handle(m: re.Match[str], clause: str) -> _Found | None:
        raw, _ = _clean_object(m[group])
        if _is_stop_object(raw) or (check is not None and not check(raw)):
            return None
        value = _value_of(raw, cut) if slot else None
        if slot and not value:
            return None
        return _Found(third_person(clause), kind, slot, value, confidence, change=change)

    return handle


def _not_article(raw: str) -> bool:
    return not re.match(r"^(?:a|an|my|our|home|night|nights|the\s+moment|myself)\b", raw, re.I)


_NAME_CUT = re.compile(r"\s+(?:and|but|from|i|by|btw)\b|,", re.I)


def _name_ok(raw: str) -> bool:
    name = _NAME_CUT.split(raw)[0]
    words = name.split()
    return 1 <= len(words) <= 4 and not re.match(
        r"^(?:not|a|an|the|unknown|irrelevant|secret|private|none|nothing|what|that|it)\b", name,
        re.I) and all(re.match(r"^[^\W\d_][\w.'-]*$", w) for w in words)


def _name(slot: str, template: str | None = None, kind: str = "fact") -> _Handler:
    def handle(m: re.Match[str], clause: str) -> _Found | None:
        raw, _ = _clean_object(m["v"])
        if not _name_ok(raw):
            return None
        name = _squash(_NAME_CUT.split(raw)[0])
        content = template.format(name=name) if template else third_person(clause)
        return _Found(content, kind, slot, normalize_value(name), 0.9 if kind == "fact" else 0.85)

    return handle


def _occupation(m: re.Match[str], clause: str) -> _Found | None:
    raw, _ = _clean_object(m["v"])
    if not _is_role(raw):
        return None
    value = normalize_value(_ROLE_CUT.split(raw)[0])
    return _Found(third_person(clause), "fact", "user.occupation", value, 0.8)


def _work_as(m: re.Match[str], clause: str) -> _Found | None:
    raw, _ = _clean_object(m["v"])
    value = normalize_value(_ROLE_CUT.split(raw)[0])
    if not value or len(value.split()) > 5:
        return None
    return _Found(third_person(clause), "fact", "user.occupation", value, 0.85)


def _age(change: bool) -> _Handler:
    def handle(m: re.Match[str], clause: str) -> _Found | None:
        age = _parse_number(m["n"])
        if not 1 <= age <= 120:
            return None
        return _Found(third_person(clause), "fact", "user.age", str(age), 0.85, change=change)

    return handle


_MY_X_STOP = re.compile(
    r"^(?:problem|question|point|guess|bet|bad|fault|pleasure|concern|issue|idea|thought|"
    r"understanding|impression|hope|worry|main\s+concern|take|opinion|answer|reply|reason|"
    r"feeling|sense|head|day|week|life|mind|turn|advice|plan|goal|only\s+\w+|first\s+\w+|"
    r"next\s+\w+|last\s+\w+|code|script|query|test|output|error|app|program|function|bug|"
    r"computer|laptop|phone|internet|connection|wifi|build|job|work|boss|team|"
    r"favou?rite\b.*|current\s+\w+|new\s+\w+|old\s+\w+)$", re.I,
)
_MY_Y_STOP = re.compile(
    r"^(?:that|not|so|too|very|really|pretty|quite|a\s+bit|kind\s+of|sort\s+of|going|being|"
    r"getting|still|always|broken|slow|fast|down|fine|ok|okay|good|great|bad|terrible|awful|"
    r"awesome|nice|cool|busy|sick|tired|here|there|done|over|gone|dead|on|off|in|at|like|"
    r"the\s+same|"
    r"similar|different|better|worse|full|empty|late|early|ready|almost|probably|maybe|also|"
    r"just|only|to|it|this|these|those|where|what|how|why|when|who|which|because|if|no|"
    r"more|less|much|a\s+lot|all|everything|nothing|something|weird|strange|hard|easy|"
    r"important|running|working|failing|crashing|stuck|lost|missing|attached|below|above|"
    r"as\s+follows)\b", re.I,
)


def _my_x_is_y(m: re.Match[str], clause: str) -> _Found | None:
    x = _squash(m["x"])
    raw, _ = _clean_object(m["y"])
    if _MY_X_STOP.match(x) or _MY_Y_STOP.match(raw) or _is_stop_object(raw):
        return None
    if len(raw.split()) > 8:
        return None
    value = normalize_value(raw)
    if not value:
        return None
    return _Found(third_person(clause), "fact", f"user.{_snake(x)}", value, 0.7)


def _rx(*parts: str) -> re.Pattern[str]:
    return re.compile("".join(parts), re.I)


# The ordered statement patterns, matched against one clause (contractions expanded, leading
# fillers and the date expression removed). The first that matches and accepts wins.
_I = r"^i\s+"
_ANYMORE = r"\s+(?:any\s?more|any\s+longer)$"
_HAVE = r"(?:have\s+|had\s+)?"
_PETS_AND_FAMILY = (
    r"(?:\w+\s+)?(?:dogs?|cats?|pupp(?:y|ies)|kittens?|rabbits?|hamsters?|parrots?|birds?|"
    r"fish|horses?|turtles?|snakes?|guinea\s+pigs?|kids?|children|child|sons?|daughters?|"
    r"brothers?|sisters?|siblings?|grandchildren|grandkids?|twins)"
)
_FAVOURITE = r"my\s+(?:all[- ]time\s+|absolute\s+)?favou?rite"
_IN_PLACE = _fact("user.location", 0.85, _PLACE_CUT, check=_not_article)
# "I lived in Munich in 2024": where the user lived, a state that has ended.
_LIVED_IN = re.compile(r"^(?:i|we)\s+(?:lived|resided|was\s+living|were\s+living)\s+in\s+", re.I)
_AT_ORG = _fact("user.employer", 0.85, _ORG_CUT, check=_not_article)

_STATEMENTS: list[tuple[re.Pattern[str], _Handler]] = [
    # negations that assert a change
    (_rx(_I, r"(?:am\s+)?", _A, r"no\s+longer\s+(?P<verb>", _NEG_VERB, r")\s+(?P<obj>.+)$"),
     _negation),
    (_rx(_I, _A, r"do\s+not\s+(?P<verb>use|like|love|enjoy|prefer|drink|eat|live\s+in|",
         r"work\s+(?:at|for))\s+(?P<obj>.+?)", _ANYMORE), _negation),
    (_rx(_I, r"am\s+", _A, r"not\s+(?P<verb>using|drinking|living\s+in|working\s+(?:at|for)|",
         r"a|an|into|on)\s+(?P<obj>.+?)", _ANYMORE), _negation),
    (_rx(_I, r"(?:have\s+)?", _A, r"(?:stopped|quit|given\s+up|gave\s+up)\s+",
         r"(?:(?P<verb>using|drinking|eating|working\s+(?:at|for))\s+)?(?P<obj>.+)$"), _negation),
    (_rx(r"^(?:i\s+am\s+)?not\s+(?:into\s+|using\s+|on\s+|a\s+fan\s+of\s+)?",
         r"(?P<obj>(?:\S+\s+){0,3}?\S+)", _ANYMORE), _negation),
    (_rx(r"^no\s+more\s+(?P<obj>(?:\S+\s+){0,3}?\S+?)(?:\s+for\s+me)?$"), _negation),
    # plain dislikes: no change, no slot
    (_rx(_I, _A, r"(?:do\s+not|cannot|can\s+not)\s+(?:really\s+)?",
         r"(?:like|stand|bear|enjoy|use|drink|eat)\s+(?P<obj>.+)$"), _dislike),
    (_rx(_I, _A, r"(?:hate|dislike|detest|loathe|avoid)\s+(?P<obj>.+)$"), _dislike),
    # changes of preference
    (_rx(_I, _HAVE, _A, r"(?:gone|went|come|came|moved|switched|changed|returned)\s+back\s+",
         r"(?:to|over\s+to)\s+(?P<obj>.+)$"), _preference(0.85, change=True)),
    (_rx(_I, _HAVE, _A, r"switched\s+(?:back\s+|over\s+)?(?:from\s+.+?\s+)?to\s+(?P<obj>.+)$"),
     _preference(0.85, change=True)),
    (_rx(_I, r"am\s+", _A, r"back\s+(?:on|to|with|using)\s+(?P<obj>.+)$"),
     _preference(0.8, change=True, need_term=True)),
    (_rx(_I, _HAVE, _A, r"(?P<verb>moved|migrated|relocated|changed)\s+(?:over\s+)?",
         r"(?:from\s+.+?\s+)?to\s+(?P<obj>.+)$"), _moved),
    (_rx(_I, _HAVE, _A, r"(?:started|begun|began)\s+(?:using|drinking)\s+(?P<obj>.+)$"),
     _preference(0.8, change=True)),
    (_rx(_I, r"(?:am\s+)?", _A, r"now\s+", _A,
         r"(?:use|using|prefer|like|love|drink|drinking|on)\s+(?P<obj>.+)$"),
     _preference(0.85, change=True)),
    # facts about oneself
    (_rx(r"^my\s+(?:full\s+|real\s+|first\s+)?name\s+is\s+(?P<v>.+)$"), _name("user.name")),
    (_rx(_I, r"am\s+(?:called|named)\s+(?P<v>.+)$"),
     _name("user.name", "The user's name is {name}")),
    (_rx(r"^(?:you\s+can\s+|you\s+may\s+|just\s+)?call\s+me\s+(?P<v>.+)$"),
     _name("user.preferred_name", "The user wants to be called {name}", "preference")),
    (_rx(_I, _A, r"(?:live|reside)\s+in\s+(?P<v>.+)$"), _IN_PLACE),
    (_rx(_I, r"am\s+", _A, r"(?:living|based|located|residing)\s+in\s+(?P<v>.+)$"), _IN_PLACE),
    (_rx(_I, _A, r"work\s+as\s+(?:a|an|the)\s+(?P<v>.+)$"), _work_as),
    (_rx(_I, _A, r"work\s+(?:at|for)\s+(?P<v>.+)$"), _AT_ORG),
    (_rx(_I, r"am\s+", _A, r"(?:working|employed)\s+(?:at|for|by)\s+(?P<v>.+)$"), _AT_ORG),
    (_rx(_I, r"(?:have\s+)?", _A, r"(?:started|begun|began)\s+",
         r"(?:working|a\s+new\s+job|a\s+job|my\s+new\s+job)\s+(?:at|for|with)\s+(?P<v>.+)$"),
     _fact("user.employer", 0.85, _ORG_CUT, change=True, check=_not_article)),
    (_rx(_I, r"am\s+", _A, r"(?:a\s+)?(?P<v>vegetarian|vegan|pescatarian|pescetarian)$"),
     _fact("user.diet", 0.85)),
    (_rx(_I, r"am\s+", _A, r"(?:a|an)\s+(?:big|huge|great|massive)?\s*fan\s+of\s+(?P<obj>.+)$"),
     _preference(0.75)),
    (_rx(_I, r"am\s+", _A, r"(?:a|an|the)\s+(?P<v>.+)$"), _occupation),
    (_rx(_I, r"am\s+(?P<n>", _NUMBER, r")(?:\s+years?(?:\s+old)?|\s+y/?o)?$"), _age(False)),
    (_rx(_I, r"(?:have\s+)?", _A, r"turned\s+(?P<n>", _NUMBER, r")$"), _age(True)),
    (_rx(_I, r"am\s+", _A, r"allergic\s+to\s+(?P<v>.+)$"), _fact(None, 0.85)),
    (_rx(_I, _A, r"have\s+(?:a|an)\s+(?P<v>.+?)\s+allergy$"), _fact(None, 0.85)),
    (_rx(_I, r"am\s+", _A, r"(?P<v>lactose|gluten)[- ]intolerant$"), _fact(None, 0.85)),
    (_rx(_I, _A, r"have\s+(?:a|an|one|two|three|four|five|\d+)\s+(?P<v>", _PETS_AND_FAMILY,
         r")(?:\s+(?:named|called)\s+.+)?$"), _fact(None, 0.8)),
    # preferences
    (_rx(r"^", _FAVOURITE, r"\s+(?P<noun>[a-z][a-z -]{0,30}?)\s+",
         r"(?:is|are|has\s+to\s+be|would\s+be)\s+(?P<obj>.+)$"), _favourite),
    (_rx(r"^(?P<obj>.+?)\s+(?:is|are)\s+(?:definitely\s+|probably\s+)?", _FAVOURITE,
         r"(?:\s+(?P<noun>[a-z][a-z -]{0,30}))?$"), _favourite),
    (_rx(_I, _A, r"prefer\s+(?P<obj>.+)$"), _preference(0.85)),
    (_rx(_I, r"would\s+", _A, r"(?:prefer|rather\s+(?:use|have|drink))\s+(?P<obj>.+)$"),
     _preference(0.7)),
    (_rx(_I, _A, r"(?:like|love|enjoy|adore)\s+(?P<obj>.+)$"), _preference(0.75)),
    (_rx(_I, _A, r"(?:use|drink)\s+(?P<obj>.+)$"), _preference(0.75)),
    (_rx(_I, r"(?:am|have\s+been)\s+", _A, r"(?:using|drinking)\s+(?P<obj>.+)$"),
     _preference(0.75)),
    # my X is Y
    (_rx(r"^my\s+(?P<x>[a-z][a-z'-]*(?:\s+[a-z][a-z'-]*){0,2}?)\s+(?:is|are)\s+(?P<y>.+)$"),
     _my_x_is_y),
]

_HABIT = _rx(_I, r"(?:", _A, r")?(?:always|never|usually|often|normally|typically|rarely)",
             r"\s+\w+\s+\w+")
_ANNUAL = frozenset({"birthday", "anniversary", "wedding_anniversary", "name_day", "birth_date",
                     "date_of_birth"})
_MY_X_IS = _rx(r"^my\s+(?P<x>[a-z][a-z'-]*(?:\s+[a-z][a-z'-]*){0,2}?)\s+(?:is|are|was)\s+",
               r"(?P<y>.+)$")
_SMALL_TALK_EVENT = _rx(r"^i\s+(?:am|was|feel|felt)\s+(?:\w+\s+)?\w+$")


def _remove(text: str, match: DateMatch) -> str:
    out = text[:match.start] + " " + text[match.end:]
    out = re.sub(r"\s+([,.;:!?])", r"\1", out)
    out = re.sub(r",\s*,", ",", out)
    return _squash(out)


# ---------------------------------------------------------------------------------------
# the extractor
# ---------------------------------------------------------------------------------------


class RuleExtractor:
    """Candidates from user messages by pattern; see the module docstring for conventions."""

    name = "rule"

    def extract(self, messages: list[Message], now: datetime) -> Extraction:
        now = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
        memories: list[Candidate] = []
        for index, message in enumerate(messages):
            if message.role != "user":
                continue
            memories.extend(extract_message(message.content, message.at or now, index))
        return Extraction(memories=memories)


def extract_message(text: str, at: datetime, index: int = 0) -> list[Candidate]:
    """Candidates from one user message written at ``at``."""
    at = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
    out: list[Candidate] = []
    seen: set[tuple] = set()
    carry_change = False
    for sentence in _sentences(_clean(text)):
        if sentence.rstrip().endswith("?"):
            continue
        opening = _strip_leads(sentence).text
        if any(_HYPOTHETICAL_START.match(s) for s in (sentence.lstrip(_EDGE), opening)):
            continue
        for clause in _clauses(sentence):
            found = _clause(clause, at, carry_change)
            carry_change |= _marks_change(clause)
            if found is None:
                continue
            candidate = Candidate(
                content=found.content[:4000], kind=found.kind, slot=found.slot,
                value=found.value, valid_from=found.valid_from, valid_to=found.valid_to,
                confidence=round(min(max(found.confidence, 0.0), 1.0), 2),
                asserts_change=found.change, evidence=[index],
            )
            key = (candidate.kind, candidate.slot, candidate.value, canonicalize(candidate.content))
            if key not in seen:
                seen.add(key)
                out.append(candidate)
    return out


def _marks_change(clause: str) -> bool:
    """"I changed my mind." / "Actually..." on its own: it is about what follows."""
    lead = _strip_leads(clause)
    return lead.marker and not lead.text


def _clause(clause: str, at: datetime, carry_change: bool) -> _Result | None:
    """The candidate in one clause, if any."""
    if clause[:1] in "\"'":
        return None
    lead = _strip_leads(clause)
    text = lead.text
    if not text:
        return None
    change = carry_change or lead.change
    if _QUESTION_START.match(text) or _HYPOTHETICAL_START.match(text) or _NOT_NOW.match(text):
        return None

    instruction = _instruction(text)
    if instruction is not None:
        return _Result(instruction, "instruction", confidence=0.85, change=change,
                       valid_from=at)
    if _CONDITIONAL.search(text):
        return None

    expanded = _expand(text)
    change |= bool(re.search(r"\bactually\b", expanded, re.I))
    hedged = lead.hedge or re.search(r"\b(?:maybe|probably|perhaps)\b", expanded, re.I)
    penalty = 0.15 if hedged else 0.0
    tense = guess_tense(expanded)
    date = find_date(expanded, at, tense)

    annual = _annual(expanded, date, at)
    if annual is not None:
        annual.change |= change
        return annual

    body = expanded
    if date is not None:
        inner = _strip_leads(_remove(expanded, date))
        body, change = _expand(inner.text), change or inner.change
        lead.context = ", ".join(c for c in (lead.context, inner.context) if c)
        penalty = max(penalty, 0.15 if inner.hedge else 0.0)
        if _NOT_NOW.match(body) or _QUESTION_START.match(body):
            return None
    if len(body) > 400:
        return None

    for pattern, handler in _STATEMENTS:
        m = pattern.match(body)
        if m is None:
            continue
        found = handler(m, body)
        if found is None:
            continue
        return _Result(_with_context(lead, found.content), found.kind, found.slot, found.value,
                       found.confidence - penalty, found.change or change,
                       valid_from=date.when if date is not None else at)
    ended = _LIVED_IN.match(body)
    if ended is not None and date is not None and date.when < at:
        m = re.match(r"(?P<v>.+)$", body[ended.end():])
        found = _IN_PLACE(m, body) if m else None
        if found is not None:
            return _Result(_with_context(lead, f"{third_person(body)} {render(date)}"), "fact",
                           found.slot, found.value, found.confidence - penalty, False,
                           valid_from=date.when, valid_to=min(_span_end(date), at))

    if _HABIT.match(expanded):
        # A habit keeps its day words ("on Mondays"): they say when, not since when.
        return _Result(_with_context(lead, third_person(expanded)), "fact",
                       confidence=0.7 - penalty, change=change, valid_from=at)

    if date is not None and _event_ok(body):
        content = f"{third_person(body)} {render(date)}"
        return _Result(_with_context(lead, content), "event", confidence=0.75 - penalty,
                       change=change, valid_from=date.when)
    return None


def _span_end(date: DateMatch) -> datetime:
    """The end of the period a date names ("in 2024" ends at 2025-01-01)."""
    when = date.when
    if date.granularity == "year":
        return when.replace(year=when.year + 1)
    if date.granularity == "month":
        return (when.replace(day=28) + timedelta(days=4)).replace(day=1)
    if date.granularity == "week":
        return when + timedelta(days=7)
    return when + timedelta(days=1)


def _with_context(lead: _Lead, content: str) -> str:
    """Put back a qualifier the clause opened with: "For backends, the user prefers Mongo"."""
    if not lead.context:
        return content
    if content.startswith("The user"):
        content = "t" + content[1:]
    return f"{lead.context[:1].upper()}{lead.context[1:]}, {content}"


def _annual(text: str, date: DateMatch | None, at: datetime) -> _Result | None:
    """"my birthday is May 3" is a fact with a yearly date; "my flight is tomorrow" an event."""
    m = _MY_X_IS.match(text)
    if m is None or date is None:
        return None
    y = _squash(m["y"])
    said = _squash(date.text).lower().removeprefix("on ")
    if not (text.endswith(date.text) and said == y.lower().removeprefix("on ")):
        return None
    slot = _snake(m["x"])
    if slot in _ANNUAL:
        value = normalize_value(re.sub(r"^on\s+", "", y, flags=re.I))
        return _Result(third_person(text), "fact", f"user.{slot}", value, 0.85, valid_from=at)
    body = _remove(text, date)
    return _Result(f"{third_person(body)} {render(date)}", "event", confidence=0.75,
                   valid_from=date.when)


def _event_ok(body: str) -> bool:
    if not _FIRST_PERSON.search(body) or _REPORTED.search(body):
        return False
    if _SMALL_TALK_EVENT.match(body) or len(body.split()) < 3:
        return False
    return True


__all__ = [
    "ALIASES", "CATEGORY", "LEXICON", "RuleExtractor", "extract_message", "fold_aliases",
    "lexicon_terms", "negates", "normalize_value", "preference_slot", "third_person",
]
