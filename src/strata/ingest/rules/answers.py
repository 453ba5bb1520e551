"""Short answers read with the question they answer.

People answer an assistant's question in fragments: "Where are you based?" → "boulder";
"What's your budget, and are you set on Mac or Windows?" → "1500 tops. windows". Alone, a
fragment says nothing; with its question it is a statement. ``frames`` turns each part of the
assistant's last question into a ``Frame``, a statement about the user with a gap where the
answer goes; ``Frame.fill`` writes the first-person sentence the answer completes ("I am based
in boulder", "my budget is 1500 tops", "I am set on windows"), which the statement families
then read like anything the user said, slots and all. What no family can read is kept as the
question's topic and the answer ("What the user does for a living: paramedic").

A question part frames an answer only when it asks about the user: it says "you" or "your",
or names something the user spoke of as theirs in the conversation ("How old are the boys?"
after "my 2 boys"; "What's their name?" or just "What breed?" after "we got a puppy"), or it
asks "Any N?" of no one else ("Any allergies I should know about?"). "How long ago did it
happen?" asks about the moment, not the person, and frames nothing. A "yep" before a value is
dropped ("yep celiac"); a bare "nope" to such a question gives nothing to keep.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from strata.ingest.dates import PAST_IRREGULAR
from strata.ingest.rules.person import third_person
from strata.ingest.rules.text import ADVERBS, clean, expand, sentences

_WH = (r"(?P<wh>what|which|where|when|who|whom|whose|how\s+(?:old|long|often|many|much|far)|"
       r"how)")
_AUX = r"(?P<aux>am|is|are|was|were|do|does|did|have|has|can|will|would)"
_SUBJECT = (r"(?P<subj>you|your(?:\s+[\w'-]+){1,3}?|(?:his|her|their|its)(?:\s+[\w'-]+){1,2}?|"
            r"he|she|they|him|her|them|"
            r"the(?:\s+[\w'-]+){1,2}?|(?-i:[A-Z][\w'-]+))")
# "What's your budget", "Which pharmacy do you use", "Where are you based".
_WH_QUESTION = re.compile(
    rf"^{_WH}(?:\s+(?P<noun>(?!(?:am|is|are|was|were|do|does|did|have|has|can|will|would)\b)"
    r"[\w'-]+(?:\s+(?!(?:am|is|are|was|were|do|does|did|have|has|can|will|would)\b)"
    rf"[\w'-]+){{0,3}}))??\s+{_AUX}\s+{_SUBJECT}(?:\s+(?P<rest>.*))?$", re.I)
# "Are you still at Google", "Do you have a preference", "Is she spayed".
_YES_NO = re.compile(rf"^{_AUX}\s+{_SUBJECT}(?:\s+(?P<rest>.*))?$", re.I)
# "Any foods you avoid", "Any pets I should keep in mind": a question with its verb left out.
_ANY = re.compile(r"^(?:and\s+)?any\s+(?P<rest>.+)$", re.I)
_PARTS = re.compile(
    r",?\s+(?:and|or)\s+(?=(?:what|which|where|when|who|how|am|is|are|was|were|do|does|did|"
    r"have|has|can|will|would|any)\b)", re.I)
# The assistant's own part in the question: "... I should know about", "... before I start".
_ASKER = re.compile(r"\s+(?:that\s+)?(?:i|we)\s+(?:should|need\s+to|can|could|might|must)\s+"
                    r"(?:\w+\s+){0,3}?(?:about|of|for|in\s+mind|into\s+account)?\s*$", re.I)
_LEAD = re.compile(r"^(?:.*?[:,]\s+)(?=(?:what|which|where|when|who|how|am|is|are|was|were|do|"
                   r"does|did|have|has|can|will|would|any)\b)", re.I)
_YES = re.compile(r"^(?:yes|yeah|yep|yup|ya|yea|sure|definitely|absolutely|of\s+course|"
                  r"correct|right|still|i\s+am|i\s+do|i\s+have)\b", re.I)
_NO = re.compile(r"^(?:no|nope|nah|not\s+really|not\s+anymore|not\s+any\s+more|negative|"
                 r"never)\b", re.I)
# Words that add tone, not content, at the end of a short answer: "5 ugh", "windows lol".
_TRAILING_TONE = re.compile(r"(?:[\s,]+(?:ugh|lol|lmao|haha+|tbh|idk|sigh|meh|i\s+guess|"
                            r"i\s+think|probably|maybe|ish))+$", re.I)
# What the user speaks of as theirs: "my 2 boys", "our cat", "we got a puppy".
_OWNED = re.compile(r"(?:\b(?:my|our)|"
                    r"\b(?:got|adopted|rescued|bought|brought\s+home)\s+(?:a|an))\s+"
                    r"(?:(?:\d+|two|three|four|five|little|old|new|big|baby|tiny|"
                    r"youngest|oldest|eldest|younger|older)\s+)*(?P<noun>[a-z][\w-]*)", re.I)
# "What breed?", "Which model?": a question that leaves its subject to what was just said.
_BARE_WH = re.compile(r"^(?P<wh>what|which)\s+(?P<noun>[a-z][\w-]*(?:\s+[a-z][\w-]*)?)$", re.I)
# "How many people are coming?", "How many guests will attend?": the count of those taking
# part in what the user is planning asks about the user's event, though it names no one.
_HEADCOUNT = re.compile(
    r"^how\s+many\s+(?P<noun>[a-z][\w-]*(?:\s+[a-z][\w-]*)?)\s+(?P<rest>(?:are|will|would)\s+"
    r"(?:be\s+)?(?:coming|attending|joining|going|invited|expected|showing\s+up|come|attend|"
    r"join|go|there)\b.*)$", re.I)
_OWN_CLAUSE = re.compile(
    r"^(?!(?:at|on|in|by|around|about|every|each|next|last|this|after|before|until)\b)"
    r"[a-z]+\s+(?:starts?|begins?|ends?|opens?|closes?|runs?|is|are|was|were)\b", re.I)
_ENDS_IN_PREPOSITION = re.compile(r"\b(?:like|on|for|with|about|in|at|to|from|into|of)$", re.I)
MAX_WORDS = 8  # a short answer names a value; a longer reply is a statement of its own
CONFIDENCE = 0.6  # a fragment read with its question: as sure as a plain statement
YES_OR_NO = re.compile(r"^(?:yes|yeah|yep|yup|ya|yea|no|nope|nah|sure|not\s+really)\b", re.I)
_YES_NO_WORD = re.compile(r"^(?:yes|yeah|yep|yup|no|nope|nah|sure|ok|okay)\b", re.I)
_NOW = re.compile(r"\s*\b(?:these\s+days|now|right\s+now|currently|at\s+the\s+moment|"
                  r"nowadays|lately|at\s+the\s+minute)$", re.I)
_CAPITALISED = re.compile(r"(?<![\w'])(?-i:[A-Z][a-z][\w&'-]*)")
_CALENDAR = frozenset(
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday i".split())
_STILL = re.compile(r"\bstill\b", re.I)
_SOMEONE_ELSE = re.compile(r"\b(?:he|she|they|his|her|their|them|him)\b|(?<!^)(?-i:[A-Z])", re.I)
_IS = re.compile(r"\b(what|where|who|how|when|which)'s\b", re.I)
_THIRD = frozenset({"he", "she", "they", "him", "her", "them"})
_BE = {"am": "am", "is": "am", "are": "am", "was": "was", "were": "was"}


@dataclass
class Frame:
    """One question about the user: the statement it asks to complete."""

    wh: str | None  # the question word; None for a yes/no question
    noun: str | None  # what a "what"/"which" question asks for ("pharmacy", "breed and size")
    subject: str  # in the first person: "I", "my dog", "my boys"
    verb: str  # the finite verb agreed with the subject ("am", "use", "looks"), or ""
    rest: str  # what follows the verb, in the first person
    topic: str  # the question as a phrase about the user, for what no family reads

    def value(self, answer: str) -> str | None:
        """What ``answer`` gives a question asking for something (a wh- or "any" question):
        the answer without its tone and its "yep" ("yep celiac" → "celiac"), or None when
        it gives nothing ("nope", "yes")."""
        answer = _TRAILING_TONE.sub("", answer.strip()).strip(" ,.;:")
        if self.wh is None:
            return answer or None
        if _NO.match(answer) and not re.match(r"^no\s+\w", answer, re.I):
            return None  # "nope", "nah, ..." ("no gluten" is a value)
        answer = re.sub(r"^(?:yes|yeah|yep|yup|ya|yea|sure)\b[\s,.!]*", "", answer, flags=re.I)
        return answer or None

    def fill(self, answer: str) -> str | None:
        """The first-person sentence ``answer`` completes, or None when the answer gives
        the statement no value (a bare "yes" to a question with nothing to assert)."""
        answer = self.value(answer)
        if not answer:
            return None
        head = " ".join(w for w in (self.subject, self.verb) if w)
        rest = self.rest
        if self.wh is None:
            return self._yes_no(answer, head, rest)
        wh = self.wh.casefold()
        if wh in ("when", "how long", "how often") or self.noun and self.noun.casefold() == "time":
            if _OWN_CLAUSE.match(answer):  # "shift starts at 7": a statement of its own
                return f"my {answer}"
        if wh == "where":
            if re.search(r"\bfrom$", rest, re.I):
                return f"{head} {rest} {answer}"
            at = re.match(r"^(?:work|study|studies|shop|bank)", f"{self.verb} {rest}".strip(),
                          re.I)
            return _join(head, rest, f"{'at' if at else 'in'} {answer}")
        if wh == "what" and self.noun and self.noun.casefold() == "time":
            return _join(head, rest, f"at {answer}")
        if wh == "how old":
            years = "" if re.search(r"[a-z]", answer, re.I) else " years old"
            return f"{head} {answer}{years}"
        if wh in ("how long", "how often", "when"):
            return _join(head, rest, answer)
        if wh in ("what", "which", "whose") and self.noun:
            if not rest and self.verb in ("am", "is", "are"):
                # "What breed is she?" → "my dog's breed is beagle"
                owner = "my" if self.subject == "I" else f"{self.subject}'s"
                return f"{owner} {self.noun} is {answer}"
            return f"the {self.noun} {head} {rest} is {answer}".replace("  ", " ")
        if wh in ("what", "who", "whom") and not rest and self.verb in ("am", "is", "are"):
            return f"{self.subject} {self.verb} {answer}"  # "my manager is Luis"
        if wh in ("who", "whom") or _ENDS_IN_PREPOSITION.search(rest):
            return _join(head, rest, answer)  # "what does my schedule look like" → "like A"
        return f"what {_join(head, rest, '')} is {answer}" if wh == "what" else None

    def _yes_no(self, answer: str, head: str, rest: str) -> str | None:
        no = _NO.match(answer)
        if _YES.match(answer) or no:
            tail = re.sub(r"^(?:no|nope|nah|yes|yeah|yep|yup|sure)\b[\s,.!]*", "", answer,
                          flags=re.I)
            if tail and no and _STILL.search(rest):
                # "Are you still at Google?" → "nah, Datadog now": the new value in its place.
                old = list(_CAPITALISED.finditer(rest))
                new = next((m for m in _CAPITALISED.finditer(tail)
                            if m.group().casefold() not in _CALENDAR
                            and m.group().casefold() not in rest.casefold()), None)
                if old and new:
                    now = _STILL.sub("", rest[:old[-1].start()]).strip()
                    return re.sub(r"\s+", " ", f"{head} {now} {tail[new.start():]}")
            if tail:  # "nah, left in march": the rest is read on its own
                return None
            if no:
                if _STILL.search(rest):
                    return f"{head} {_STILL.sub('no longer', rest)}"
                return f"{_negated(head)} {rest}".strip()
            return f"{head} {rest}".strip()
        if _YES_NO_WORD.match(answer):
            return None
        choice = re.search(r"\b(?P<a>(?!(?:on|in|at|for|with|to|of|about|from|by)\b)[\w'-]+"
                           r"(?:\s+[\w'-]+)?)\s+or\s+(?P<b>[\w'-]+(?:\s+[\w'-]+)?)$", rest)
        if choice:  # "Are you set on Mac or Windows?" → "windows"
            return f"{head} {rest[:choice.start()]}{answer}".strip()
        # "Do you have a preference?" → "window"; "Have you picked a quit date?" → "feb 1".
        owns = re.match(r"^(?:\w+ed\s+|\w+\s+)?(?:a|an|any)\s+(?P<noun>[\w'-]+(?:\s+[\w'-]+)?)$",
                        rest, re.I)
        if owns:
            return f"{_possessive(self.subject)} {owns['noun']} is {answer}"
        return None


def _join(head: str, rest: str, tail: str) -> str:
    return " ".join(p for p in (head, rest, tail) if p)


def _negated(head: str) -> str:
    subject, _, verb = head.rpartition(" ")
    if verb in ("have", "has") and subject:
        return f"{subject} {'do' if verb == 'have' else 'does'} not have"
    if verb in ("am", "is", "are", "was", "were", "can", "will", "would"):
        return f"{head} not"
    return f"{subject} do not {verb}".strip() if subject else f"do not {verb}"


def _possessive(subject: str) -> str:
    return "my" if subject == "I" else f"{subject}'s"


def _first_person(text: str) -> str:
    """A question's words as the user would say them: "you" → "I", "your" → "my"."""
    text = re.sub(r"\byourself\b", "myself", text, flags=re.I)
    text = re.sub(r"\byours\b", "mine", text, flags=re.I)
    text = re.sub(r"\byour\b", "my", text, flags=re.I)
    return re.sub(r"\byou\b", "me", text, flags=re.I)


def _agree(verb: str, subject: str, aux: str) -> str:
    """The finite verb of a question's main verb under its auxiliary: "do you use" → "use",
    "does your schedule look" → "looks", "did you move" → "moved"."""
    aux = aux.casefold()
    if aux == "did":
        return _past(verb)
    if aux == "does" and subject != "I":
        if re.search(r"(?:s|sh|ch|x|z|o)$", verb):
            return verb + "es"
        if re.search(r"[^aeiou]y$", verb):
            return verb[:-1] + "ies"
        return verb + "s"
    return verb


_PAST = {"go": "went", "get": "got", "do": "did", "have": "had", "make": "made", "take": "took",
         "come": "came", "leave": "left", "start": "started", "buy": "bought", "find": "found",
         "begin": "began", "meet": "met", "move": "moved", "say": "said", "tell": "told"}


def _past(verb: str) -> str:
    if verb in _PAST:
        return _PAST[verb]
    if verb in PAST_IRREGULAR or verb.endswith("ed"):
        return verb
    return verb + ("d" if verb.endswith("e") else "ed")


def _subject(words: str, owned: list[str]) -> str | None:
    """A question's subject in the user's words, or None when it is not the user's: "you"
    → "I"; "your schedule" → "my schedule"; "she" → "my dog" when the user just spoke of
    their dog; "the boys" → "my boys" after "my 2 boys"."""
    low = words.casefold()
    if low == "you":
        return "I"
    if low.startswith("your "):
        return "my " + words[5:]
    if low in _THIRD:
        return f"my {owned[-1]}" if owned else None
    whose, _, what = low.partition(" ")
    if whose in ("his", "her", "their", "its") and what:
        # "What's their name?" after "we got a puppy" → "my puppy's name"
        return f"my {owned[-1]}'s {words.split(maxsplit=1)[1]}" if owned else None
    if low.startswith("the "):
        noun = low.split()[-1]
        stem = noun.rstrip("s")
        if any(o.casefold().rstrip("s") == stem for o in owned):
            return "my " + words[4:]
    return None


def frames(assistant: str, before: str = "") -> list[Frame]:
    """The questions about the user in an assistant message, each as a ``Frame``, in order.
    ``before`` is what the user said just before (for "she", "the boys")."""
    owned = [n.lower() if n.isupper() else n for n in
             (m["noun"] for m in _OWNED.finditer(before))]  # "WE GOT A PUPPY"
    out: list[Frame] = []
    for sentence in sentences(clean(assistant)):
        if not sentence.rstrip().endswith("?"):
            continue
        text = _IS.sub(lambda m: f"{m[1]} is", expand(sentence.rstrip(" ?")))
        text = _LEAD.sub("", text, count=1)
        for part in _PARTS.split(text):
            frame = _frame(part.strip(" ,"), owned)
            if frame is not None:
                out.append(frame)
    return out


def _frame(part: str, owned: list[str]) -> Frame | None:
    part = re.sub(r"^what\s+is\b", "what is", part, flags=re.I)
    part = _ASKER.sub("", part)
    m = _WH_QUESTION.match(part) or _YES_NO.match(part)
    if m is not None and "wh" in m.groupdict() and (m["wh"] or "").casefold() in ("how", "why"):
        return None  # "how did you manage?", "why?": answered by a story, not a value
    if m is not None:
        subject = _subject(m["subj"], owned)
        if subject is None:
            return None
        aux = m["aux"].casefold()
        rest = _NOW.sub("", _first_person(m["rest"] or "")).strip()
        if (aux in _BE and subject != "I" and rest and not subject.startswith("my " + rest)
                and not re.match(r"^(?:\w+ed|\w+ing|on|in|at|for|with|to|of|about|from|by|"
                                 r"like)\b", rest, re.I)):
            subject, rest = f"{subject} {rest}", ""  # "What is your rough budget"
        verb = ""
        if aux in _BE:
            verb = _BE[aux] if subject == "I" else ("are" if subject.endswith("s") and aux in (
                "are", "were") else ("was" if aux in ("was", "were") else "is"))
        elif aux in ("have", "has", "can", "will", "would"):
            verb = "have" if aux in ("have", "has") and subject == "I" else aux
            if aux in ("have", "has") and rest.split()[:1] and rest.split()[0].endswith(
                    ("ed", "en")):
                verb = "have" if subject == "I" else "has"
        else:  # do / does / did: the main verb carries the tense
            adverbs = re.match(rf"^(?:(?:{ADVERBS}|\w+ly)\s+)*", rest, re.I).group()
            first, _, after = rest[len(adverbs):].partition(" ")
            if not first:
                verb, rest = aux, ""
            else:
                verb, rest = f"{adverbs}{_agree(first, subject, aux)}", after
        wh = m["wh"] if "wh" in m.groupdict() else None
        wh = wh and re.sub(r"\s+", " ", wh)
        noun = (m["noun"] if "noun" in m.groupdict() else None) or None
        said = " ".join(w for w in (subject, verb, rest) if w)
        if wh is None:
            phrase = f"whether {said}"
        else:
            phrase = " ".join(w for w in (wh, noun, said) if w)
        return Frame(wh, noun, subject, verb, rest, third_person(phrase))
    count = _HEADCOUNT.match(part)
    if count is not None:
        return Frame("how many", count["noun"], "", "", count["rest"],
                     f"how many {count['noun']} {count['rest']}")
    bare = _BARE_WH.match(part)
    if bare is not None and owned:
        # "What breed?" right after the user spoke of their dog: the dog's breed.
        subject = f"my {owned[-1]}"
        return Frame(bare["wh"], bare["noun"], subject, "is", "",
                     third_person(f"{bare['wh']} {bare['noun']} {subject} is"))
    m = _ANY.match(part)
    if m is not None and (re.search(r"\byou\b|\byour\b", m["rest"], re.I)
                          or not _SOMEONE_ELSE.search(m["rest"])):
        # "Any allergies?", "Any dietary restrictions I should know about?": asked of the
        # user unless it names someone else.
        phrase = re.sub(r"\byou\b", "I", _first_person_keep_you(m["rest"]), flags=re.I)
        if not re.search(r"\b(?:I|my)\b", phrase):
            phrase = f"my {phrase}"  # "Any allergies?" → "my allergies: ..."
        return Frame("any", None, "I", "", "", third_person(phrase))
    return None


def _first_person_keep_you(text: str) -> str:
    text = re.sub(r"\byour\b", "my", text, flags=re.I)
    return re.sub(r"\byourself\b", "myself", text, flags=re.I)


def answer_content(frame: Frame, answer: str) -> str:
    """What no statement family reads, kept as the question's topic and its answer."""
    answer = frame.value(answer) or ""
    topic = frame.topic.strip()
    topic = topic[:1].upper() + topic[1:]
    return f"{topic}: {answer}"
