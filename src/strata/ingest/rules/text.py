"""The clause and tense toolkit every statement family uses: text cleaning, sentences and
clauses, contractions, lead-ins ("actually", "btw", "I think"), and the openings that make a
clause a question, a hypothetical or something no longer true."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime

from strata.ingest.dates import PAST_IRREGULAR, DateMatch, find_date, guess_tense
from strata.write.values import _EDGE
from strata.write.values import _squash as squash

ADVERBS = (
    r"also|really|still|now|usually|always|never|often|sometimes|just|actually|definitely|"
    r"mostly|mainly|generally|currently|totally|absolutely|honestly|personally|finally|"
    r"recently|truly|strongly|normally|typically|primarily|rarely|seldom|no\s+longer|even|"
    r"already|only|sort\s+of|kind\s+of|much|rather|kinda|occasionally|regularly|"
    r"exclusively|happily|officially|probably|certainly|not|then"
)
def is_past(word: str) -> bool:
    return word in PAST_IRREGULAR or (word.endswith("ed") and not word.endswith("eed"))




_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "`": ""})
_CODE = re.compile(r"```.*?```", re.S)
_ABBREVIATIONS = frozenset(
    "dr mr mrs ms st vs e.g i.e etc jr sr prof no approx inc ltd co mt ft fig cf".split()
)
# An ellipsis before a word in lower case is a pause ("our league just... dissolved").
_SENTENCE_END = re.compile(r"(?<!\.)(?!\.{2,}\s+[a-z])[.!?]+(?=\s|$)|\n+|;\s+")


# Emoji and other pictographs carry tone, not facts: "started at Stripe 🎉" is "started at
# Stripe".
_PICTOGRAPHS = re.compile(
    "[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF\uFE0F\u200D\U0001F1E6-\U0001F1FF]+")
# Between two stretches of text they mark a break: a full stop before a new subject ("I'M
# LICENSED 🚗 the examiner said ..." is two sentences), a comma before words that go on
# without one ("the civic is gone 😅 did the trade-in Thursday": one story).
_PICTOGRAPH_BREAK = re.compile(r"(?<=[\w)])\s*" + _PICTOGRAPHS.pattern + r"(?=\s+(?P<next>\w+))")
# A request after one opens a sentence too, question mark or not ("no more espressos 🍵 can u
# suggest snacks").
_NEW_SUBJECT = frozenset("i i'm i've we we're my our the he she they it this that you "
                         "can could would what how why any pls please".split())


_UP_TO_END = re.compile(r"[^.!?\n]*(?P<end>[.!?\n]|$)")


def _pictograph_break(m: re.Match[str]) -> str:
    # Before a question it ends what was said ("12 hr shift done 😵 quick dinner ideas?" is
    # a statement, then a question).
    if _UP_TO_END.match(m.string, m.end())["end"] == "?":
        return "\n"
    return ". " if m["next"].casefold() in _NEW_SUBJECT else ", "


def clean(text: str) -> str:
    text = _CODE.sub("\n", unicodedata.normalize("NFKC", text))
    text = _PICTOGRAPH_BREAK.sub(_pictograph_break, text.translate(_QUOTES))
    text = _PICTOGRAPHS.sub(" ", text)
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(">"))


def sentences(text: str) -> list[str]:
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
FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|my|me|we|our|us)\b", re.I)
_BUT = re.compile(r",?\s+but\s+|\s+[-–—]+\s+", re.I)
_NEW_CLAUSE = re.compile(
    r",\s+(?:and\s+|so\s+)?(?=(?:i|i'm|i've|my|we)\b)|\s+and\s+(?=(?:i|i'm|i've|my)\b)"
    # "ugh it's raining again, this city i swear anyway my gym is ...": a change of topic
    r"|[,\s]+(?=(?:anyway|anyways|btw|by\s+the\s+way)[\s,]+(?:i|i'm|i've|my|we)\b)"
    # "my gym is X, can u build me a plan": a request asked without its question mark
    r"|,\s+(?=(?:can|could|would|will)\s+(?:you|u)\b)"
    # "at work I use a Mac, at home I'm on Linux": a new context opens a new clause
    r"|,\s+(?=(?:at|on|for|in|during)\s+(?:\w+\s+){0,3}?(?:i|i'm|i've|my|we)\b)"
    # "sushi is my fav food, can't get enough": a new clause with its subject left out
    r"|,\s+(?=(?:can't|cannot|gotta|gonna|wanna|love|loved|hate|hated|miss)\b)", re.I,
)


# Connectives that start a clause of its own whatever the first one says: "..., so that's
# the date now", "..., because ...", "..., which means ...".
_CONNECTIVE = re.compile(
    # "..., so that's the date now" points back at what it follows: one clause.
    r",\s+(?=(?:so(?!\s+(?:that's|that\s+is|it's|it\s+is)\b)|because|which\s+means)\s)"
    r"|\s+(?=so\s+(?:i|i'm|i've|we|we're|my|our|now|you|you'd|you're)\b)"
    # "I'm allergic to X so keep that in mind if ...": a request to the listener after a fact
    r"|,?\s+(?=so\s+(?:please\s+|pls\s+|plz\s+)?(?:keep|bear|remember|note|make\s+sure|"
    r"don't|do\s+not|never|always|avoid)\b)"
    # "switched to matcha, no more espressos": what a change ended, a clause of its own
    r"|,\s+(?=no\s+(?:more|longer)\s)"
    # "handed in my badge, starting monday as a receptionist": the next job, after the end
    r"|,\s+(?=(?:starting|beginning)\s+(?:\w+\s+){0,3}?as\s+(?:a|an|the)\s)"
    # "a backend dev, on a team of 4": the team's size, a fact of its own
    r"|,\s+(?=on\s+a\s+(?:\w+\s+)?team\s+of\s)", re.I)


# What makes a list item a clause of its own: a finite verb, a subject, or a past form.
_CLAUSAL = re.compile(
    r"\b(?:is|are|was|were|am|has|have|had|i|i'm|i've|we|we're|my|our|he's|she's|they're|"
    r"got|left|moved|adopted|started|switched|went|took|bought|joined|quit|need|needs|"
    + "|".join(sorted(PAST_IRREGULAR)) + r")\b|\b\w{3,}ed\b", re.I)
_LABEL = re.compile(r"^[^:()]{1,80}:\s+(?=\S)")
_LIST_SEP = re.compile(r",\s+(?:and\s+|&\s+|then\s+)?(?:[-–—]+\s*(?:[^,—–-]{1,30}?)[-–—]+\s*)?")


# "quick about me: I'm Jess", "work update: we moved to Notion", "work stuff: got promoted":
# a heading before what the speaker says of themselves, "I" said or left out before a verb
# of what happened.
_LABEL_BEFORE_SELF = re.compile(
    r"^[^:()]{1,80}:\s+(?=(?:(?:it\s+)?turns\s+out\s+(?:that\s+)?|apparently,?\s+)?"
    r"(?:i|i'm|im|i've|we|we're|my|our)\b|(?:(?:just|finally|also|"
    r"officially|recently)\s+)*(?:got|started|moved|left|quit|joined|switched|bought|sold|"
    r"adopted|finished|went|took|began|\w{3,}ed)\s)", re.I)


def _unlabelled(piece: str) -> str:
    label = _LABEL_BEFORE_SELF.match(piece)
    if label is None or not strip_leads(label.group()).text:
        return piece  # "Correction: I live in ...": a lead-in, which says what follows is one
    return piece[label.end():]


def list_items(piece: str) -> list[str]:
    """A sentence that lists what happened or what is so, one clause an item ("left Uber for
    Airbnb, we moved to Oakland, adopted a mutt named Tofu, and I got into bouldering"), as
    its items; any other sentence whole. A list of things ("apples, pears and bananas") is
    not a list of clauses: an item without a verb stays with the one before it."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(piece):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and ch == ",":
            m = _LIST_SEP.match(piece, i)
            if m is not None:
                items.append(piece[start:i])
                start = m.end()
    items.append(piece[start:])
    if len(items) < 3 or sum(bool(_CLAUSAL.search(it)) for it in items[1:]) < 2:
        return [_unlabelled(piece)]
    out = [_LABEL.sub("", items[0])]  # "year-end brain dump: left Uber ...": a heading
    for item in items[1:]:
        if _CLAUSAL.search(item):
            out.append(item)
        else:
            out[-1] = f"{out[-1]}, {item}"
    return out


# "she kept the apartment and I'm subletting ...": a clause of someone else's before the
# speaker's own ("she and I" is one subject, not a clause).
_OTHER_SUBJECT = re.compile(r"^(?:he|she|they)\s+\w+\s+\w+", re.I)


def clauses(sentence: str) -> list[str]:
    out = []
    for piece in (p for part in _BUT.split(sentence) for p in _CONNECTIVE.split(part)):
        start = 0
        for m in _NEW_CLAUSE.finditer(piece):
            left = piece[start:m.start()]
            if (FIRST_PERSON.search(left) or _OTHER_SUBJECT.match(left.strip())) and (
                    not _SUBORDINATE.match(left.strip())):
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


def expand(text: str) -> str:
    text = _I_D.sub(
        lambda m: f"{m[1]} {'had' if is_past(m[2].lower()) else 'would'} {m[2]}", text
    )
    for pattern, repl in _CONTRACTIONS:
        text = pattern.sub(repl, text)
    return squash(text)


# ---------------------------------------------------------------------------------------
# lead-ins, questions, hypotheticals
# ---------------------------------------------------------------------------------------

_SEP = r"[\s,:;.!\-–—]*"
# A speaker owning an error, which announces the correction after it: "I had it wrong this
# whole time", "I gave you the wrong date before", "I got that backwards", "I was wrong".
_OWNED_ERROR = (
    r"(?:i(?:'ve|\s+have)?\s+(?:had|got|gotten|have)\s+(?:it|that|this|them|those)\s+"
    r"(?:all\s+)?(?:wrong|backwards|mixed\s+up)|"
    r"i\s+(?:gave|told)\s+you\s+the\s+wrong\s+[a-z]+|i\s+was\s+wrong(?:\s+about\s+[^,:;]+)?|"
    # "I misremembered", "I mixed them up", "I swapped the digits", "I misspoke"
    r"i\s+(?:misremembered|misspoke|mistyped|misread|miscounted)|"
    r"i\s+(?:mixed|muddled)\s+(?:it|that|them|those|the\s+\w+)\s+up|"
    r"i\s+(?:swapped|switched|flipped|transposed)\s+the\s+(?:digits|numbers|dates|days))"
    r"(?:\s+(?:this|the)\s+whole\s+time|\s+before|\s+earlier|\s+last\s+time)?"
)
_LEADS: list[tuple[re.Pattern[str], str | None]] = [
    (re.compile(
        r"^(?:actually|correction|update|no\s+wait|wait|oops|scratch\s+that|"
        r"(?:sorry,?\s+)?i\s+meant(?:\s+to\s+say)?|let\s+me\s+correct\s+(?:that|myself)|"
        r"to\s+correct\s+myself|change\s+of\s+plans?|"
        r"(?:i(?:'ve|\s+have)?\s+)?changed\s+my\s+mind(?:\s+about\s+[^,:;]+)?|"
        r"(?:i(?:'ve|\s+have)?\s+)?made\s+a\s+mistake(?:\s+earlier)?|" + _OWNED_ERROR + r")\b" + _SEP,
        re.I), "marker"),
    (re.compile(r"^(?:no|nope|nah)\s*[,!.;:\-–—]+\s*", re.I), "change"),
    (re.compile(r"^(?:and\s+)?now,?\s+(?!that\b)(?=\w)", re.I), "change"),
    (re.compile(
        r"^(?:from\s+now\s+on|going\s+forward|moving\s+forward|starting\s+(?:now|today))"
        r"[\s,:;\-–—]+(?=(?:i|i'm|i've|i'll|my|we)\b)", re.I), "change"),
    (re.compile(
        r"^(?:i\s+think|i\s+guess|i\s+believe|i\s+suppose|probably|maybe|perhaps|i\s+mean|"
        r"i\s+feel\s+like|ngl|lowkey|low\s+key|kinda|sorta|like)"
        r"(?:\s+that)?\b" + _SEP, re.I), "hedge"),
    (re.compile(
        r"^(?:and|so|but|also|plus|well|ok|okay|oh|yeah|yes|yep|sure|hey|hi|hello|btw|"
        r"by\s+the\s+way|honestly|personally|frankly|basically|anyway|anyways|fyi|"
        r"just\s+so\s+you\s+know|for\s+the\s+record|"
        r"(?:i\s+)?(?:just\s+)?want(?:ed)?\s+to\s+(?:let\s+you\s+know|tell\s+you)(?:\s+that)?"
        r"(?=\s+(?:i|i'm|i've|my|we|we're|our)\b)|"
        r"since\s+(?:we|i)\s+(?:last\s+)?(?:talked|spoke|chatted|caught\s+up)(?:\s+last)?|"
        r"(?:please\s+)?remember\s+that|(?:please\s+)?note\s+that|keep\s+in\s+mind\s+that|"
        r"as\s+i\s+(?:said|mentioned|told\s+you)"
        r"(?:\s+(?:before|earlier))?|like\s+i\s+said|to\s+be\s+honest|tbh|these\s+days|"
        r"nowadays|currently|lately|at\s+the\s+moment|right\s+now|"
        r"(?:thanks|thank\s+you)(?!\s+(?:for|so\s+much\s+for)\b)|"
        r"(?:the\s+)?(?:good|bad|big|sad|great)\s+news(?:\s+is(?:\s+that)?)?|fun\s+fact|"
        r"in\s+fact|guess\s+what|news|so\s+yeah|yup|"
        # what the speaker found out: "turns out I'm allergic to kiwi"
        r"(?:it\s+)?turns\s+out(?:\s+that)?|apparently|"
        # a change of topic: "unrelated: ...", "totally different topic: ..."
        r"(?:totally\s+|completely\s+)?(?:unrelated|(?:different|new|unrelated)\s+topic)|"
        r"side\s+note|on\s+(?:another|a\s+different|an\s+unrelated)\s+note|quick\s+update|"
        # an announcer set off by punctuation: "plot twist, ...", "funny, ...", "gossip time: ..."
        r"(?:plot\s+twist|funny(?:\s+enough)?|funnily\s+enough|(?:gossip|story)\s+time|heads\s+up|"
        r"spoiler\s+alert)(?=\s*[,:;.!\-–—])|"
        r"wow|woah|whoa|aw+|omg|ugh|argh|meh|sigh|phew|yikes|oof|ha(?:ha)+|lol|cool|great|awesome|nice|amazing|sweet|yay|o+h+|"
        r"ah+|hm+|um+|true|right|exactly|totally|definitely|absolutely|"
        r"(?:good|great|nice)\s+to\s+(?:hear|see)\s+from\s+you|"
        r"long\s+time\s+no\s+(?:see|talk|chat))\b" + _SEP, re.I), None),
]
# "When I fly I always book an aisle seat": a habitual condition, kept as context.
_WHENEVER = re.compile(
    r"^(?P<lead>(?:when|whenever|every\s+time)\s+(?:i|we)\s+(?!(?:was|were|used|had|lived|did)\b)"
    r"\w+(?:\s+\w+){0,3}?)[,\s]+(?=(?:i|we)\s)", re.I)
# "At work I use a Mac": a scope opening the clause, kept as context.
_SCOPE = re.compile(r"^(?P<lead>(?:at|on|for|in|during)\s+(?:\w+\s+){0,2}?\w+)\s+"
                    r"(?=(?:i|i'm|i've|we|we're)\b)", re.I)
# "For backends, I ..." (a qualifier, kept as context) or "Big news: I ..." (a filler).
_COMMA_LEAD = re.compile(r"^(?P<lead>[^,:]{1,40})(?P<mark>[,:])\s+(?=(?:i|i'm|i've|my|we)\b)",
                         re.I)
_COMMA_LEAD_BLOCK = re.compile(
    r"\b(?:i|me|my|we|our|us|if|when|unless|because|although|though|since|while|whenever|back|"
    r"suppose|supposing|imagine|pretend|assuming|hypothetically|theoretically|ideally|theory|"
    r"would|could|might|said|told|used)\b", re.I,
)


_VOCATIVE = re.compile(r"(?-i:[A-Z][\w'-]*)(?:\s+(?-i:[A-Z][\w'-]*))?")
EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass
class Lead:
    text: str
    change: bool = False
    hedge: bool = False
    marker: bool = False  # an explicit correction word ("actually", "changed my mind")
    context: str = ""  # a qualifying phrase set off by a comma ("For backends, ...")


# The listener's name opening a clause: "Jon, glad I could help".
_ADDRESS = re.compile(
    r"^(?!(?:No|Nope|Nah|Yes|Yeah|Yep|Well|Ok|Okay|So|And|But|Now|Actually|Wait|Oops|Sorry|"
    r"Update|Correction|Also|Plus|Then|Still|Sure|Right|Honestly|Personally|Anyway)\b)"
    r"(?-i:[A-Z][a-z]+)[,!]\s+(?=\S)")


_TRAILING = re.compile(r"(?:[\s,]+(?:actually|btw|by\s+the\s+way|lol|lmao|haha+|tbh|fyi|"
                       r"though|tho|anyway|anyways|now|these\s+days|nowadays|right\s+now|i\s+swear|"
                       r"at\s+the\s+moment|lately|i\s+guess|i\s+think|i\s+suppose|ngl))+"
                       r"[\s.!]*$", re.I)


def strip_leads(text: str) -> Lead:
    lead = Lead(text.strip(_EDGE.replace("'", "").replace('"', "")))
    for _ in range(8):
        before = lead.text
        lead.text = _ADDRESS.sub("", lead.text)
        m = _WHENEVER.match(lead.text) or _SCOPE.match(lead.text)
        if m and find_date(m["lead"], EPOCH) is None:
            lead.text = lead.text[m.end():]
            lead.context = squash(f"{lead.context}, {m['lead']}" if lead.context else m["lead"])
        for pattern, flag in _LEADS:
            m = pattern.match(lead.text)
            if m and m.end() > 0:
                lead.text = lead.text[m.end():].strip(" \t,;:")
                lead.change |= flag in ("change", "marker")
                lead.hedge |= flag == "hedge"
                lead.marker |= flag == "marker"
        m = _COMMA_LEAD.match(lead.text)
        # A date is not filler: "Yesterday, I switched ..." keeps its "Yesterday".
        if m and not _COMMA_LEAD_BLOCK.search(m["lead"]) and find_date(m["lead"], EPOCH) is None:
            lead.text = lead.text[m.end():]
            # A qualifier is context; a colon's lead-in ("Big news: ...") and a name the
            # speaker addresses ("Gina, I ...") are not.
            if m["mark"] == "," and not _VOCATIVE.fullmatch(m["lead"].strip()):
                lead.context = squash(f"{lead.context}, {m['lead']}" if lead.context
                                      else m["lead"])
        tail = _TRAILING.search(lead.text)
        if tail is not None and tail.start() > 0:
            # "I'm 35 actually", "we moved to Austin btw": a lead-in said last.
            lead.change |= bool(re.search(r"actually|now|these\s+days", tail.group(), re.I))
            lead.hedge |= bool(re.search(r"guess|think|suppose", tail.group(), re.I))
            lead.marker |= bool(re.search(r"actually", tail.group(), re.I))
            lead.text = lead.text[:tail.start()].rstrip(" ,")
        if lead.text == before:
            break
    return lead


QUESTION_START = re.compile(
    r"^(?:(?:do|does|did)(?!n't)\s+(?!not\b)|(?:am|is|are|was|were|can|could|would|should|"
    r"will|shall|have|has|what|which|who|whom|whose|where|why|how|isn't|aren't|wasn't|"
    r"don't\s+(?:i|you)|didn't|doesn't)\b)", re.I,
)
HYPOTHETICAL_START = re.compile(
    r"^(?:if|suppose|supposing|imagine|hypothetically|let'?s\s+say|say\s+(?:i|we)|pretend|"
    r"assuming|assume|what\s+if|in\s+case|even\s+if|unless|would|wouldn't|i\s+wish|"
    r"i\s+wonder|wish|in\s+theory|theoretically|in\s+an?\s+ideal\s+world)\b", re.I,
)
NOT_NOW = re.compile(
    r"^(?:(?:when|whenever)(?=\s+(?:i|we)\s+(?:was|were|used|had|lived|did|\w+ed)\b)|"
    r"(?:when|whenever)(?!\s+(?:i|we)\b)|back\s+(?:when|then|in)|in\s+the\s+past|as\s+a\s+(?:kid|child|student)|"
    r"years\s+ago|i\s+used\s+to|we\s+used\s+to|used\s+to|i\s+(?:once|previously|originally)|"
    r"before\s+that|i\s+(?:said|told|mentioned|thought|claimed|wrote)|"
    r"(?:you|he|she|they|someone|somebody|people)\s+(?:said|say|told|think|thought))\b", re.I,
)
# A time of one's life that is over: "in high school", "as a kid", "growing up", "my first car".
_LIFE_STAGE = re.compile(
    r"\b(?:(?:in|during|through|throughout|after|before)\s+(?:high\s+school|middle\s+school|"
    r"elementary\s+school|grade\s+school|college|uni|university|grad\s+school|my\s+(?:teens|"
    r"twenties|thirties|20s|30s|youth|childhood))|as\s+an?\s+(?:kid|child|teen|teenager|"
    r"undergrad)|growing\s+up|back\s+(?:then|in\s+the\s+day)|childhood|"
    r"my\s+(?:first|old|former|previous)\s+[\w-]+\s+(?:was|were|had))\b", re.I)
# The simple past with a span ("I lived there for three years") or an end ("until college")
# tells a finished period; the perfect ("I have been vegetarian for 12 years") one that goes on.
_FINISHED_SPAN = re.compile(
    r"\b(?:for\s+(?:\w+\s+){0,2}(?:years?|months?|decades?)|until\s+(?!now\b|today\b)\w+)\b",
    re.I)
_PERFECT = re.compile(r"\b(?:have|has|'ve)\s+(?:\w+\s+)?(?:been|\w+ed)\b|\b(?:still|now)\b",
                      re.I)


def told_as_over(text: str) -> bool:
    """Whether a clause tells a state of the speaker's past that no longer holds: "I ran the
    400 in high school", "my childhood dog was Rex", "I lived in Berlin for three years",
    "I ate meat every day until college". Such a statement is history: it answers "what did"
    and never "what does"."""
    if guess_tense(text) != "past" or _PERFECT.search(text):
        return False
    return bool(_LIFE_STAGE.search(text) or _FINISHED_SPAN.search(text))


CONDITIONAL = re.compile(r"\b(?:if|unless|in\s+case)\b", re.I)
REPORTED = re.compile(r"\b(?:said|told\s+you|mentioned|claimed|wrote)\b", re.I)


def remove_date(text: str, match: DateMatch) -> str:
    out = text[:match.start] + " " + text[match.end:]
    out = re.sub(r"\s+([,.;:!?])", r"\1", out)
    out = re.sub(r",\s*,", ",", out)
    return squash(out)

