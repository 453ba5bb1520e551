"""Ends of states: "I cancelled my Equinox membership", "axed Hulu and Peacock", "62 days
without a cigarette", "haven't touched my guitar since March", "I'm done with metformin",
"I don't bowl anymore", "we said goodbye to Pepper", "Sunset Lanes closed for good", "I broke
up with Sam", "the divorce was finalized", "our league just... dissolved", and a time given
over to something new: "my saturdays are fully eaten by coaching now" ends what the user did
on saturdays.

Each names what ended and carries the end key of it (``strata.write.topics``:
``ended:<object>``, no value, a change), so the write path retires the statements that name
it as still so -- and only it: "axed Hulu and Peacock" is two ends, one per object, and a
statement naming Netflix and Hulu keeps Netflix. The end itself is stored in the user's
words, so "does the user still pay for Hulu?" finds it."""

from __future__ import annotations

import re

from strata.ingest.rules.base import (
    VAGUE, A, HAVE, I, Found, Handler, clean_object, head, is_stop_object, rx,
)
from strata.ingest.rules.identity import NEW_ORG
from strata.ingest.rules.person import third_person
from strata.ingest.rules.text import squash
from strata.write import topics

# Words that say what kind of thing ended, not which one: "my Equinox membership" ends
# Equinox.
_KIND = re.compile(
    r"\s+(?:membership|subscription|account|plan|pass|tickets?|lessons?|classes|class|"
    r"habit|gig|job|shift|treatment|prescription|meds|medication|streak|league|team)$", re.I)
_GROUPS = frozenset({"league", "team"})
_GERUND = re.compile(
    r"^(?:(?:going|heading)\s+(?:to|into)|attending|taking|seeing|playing(?:\s+(?:in|for|with))?|"
    r"visiting|dating|watching|reading|doing|volunteering\s+(?:at|for|with)|working\s+(?:at|on|for)|"
    r"on|with|of|in|at|for)\s+", re.I)
_KIND_AT = re.compile(
    r"^(?:(?:my|the|our)\s+)?(?:job|position|role|gig|membership|subscription|account|spot|"
    r"place|seat|internship|residency|shift)\s+(?:at|with|for|on|in)\s+", re.I)
_SMALL = re.compile(r"^(?:(?:the|a|an|my|our|his|her|their|old|new|little|beloved|"
                    r"favou?rite|whole|entire)\s+)+", re.I)
_SPLIT = re.compile(r"\s*,\s*(?:and\s+|&\s+)?|\s+(?:and|&)\s+", re.I)
_NOT_AN_OBJECT = re.compile(
    r"^(?:things|stuff|it\s+all|everything|\d+\s*(?:min(?:ute)?s?|hours?|days?|weeks?|months?|years?)\b|work|home|school|"
    r"early|late|now|there|here|the\s+house|the\s+office|my\s+(?:keys|phone|wallet))", re.I)


_LIST = re.compile(r"^[\w'&.+-]+(?:\s+[\w'&.+-]+){0,2}(?:\s*,\s*[\w'&.+-]+(?:\s+[\w'&.+-]+){0,2})*"
                   r"\s*,?\s+(?:and|&)\s+[\w'&.+-]+(?:\s+[\w'&.+-]+){0,2}$", re.I)


def _objects(raw: str) -> list[str]:
    """The things a clause says ended, one per item of a list ("Hulu and Peacock")."""
    obj, _ = clean_object(raw)
    parts = _SPLIT.split(obj) if _LIST.match(obj) else [obj]
    out = []
    for part in parts:
        # "stopped going to Equinox", "gave up on the novel": what the activity is about.
        part = _GERUND.sub("", squash(part))
        # "my job at Acme", "the membership at Equinox": the place names what ended.
        part = _KIND_AT.sub("", part)
        part, _ = clean_object(squash(head(part)))
        part = re.sub(r"\s+(?:back|again|already|too)$", "", _SMALL.sub("", part), flags=re.I)
        part = _KIND.sub("", part) if len(part.split()) > 1 else part
        # A bare kind ("my job", "the membership", "the trip") names nothing in particular;
        # a group the user is in does ("our league dissolved").
        if (is_stop_object(part) or _NOT_AN_OBJECT.match(part) or len(part.split()) > 3
                or (_KIND.match(f" {part}") and part.lower() not in _GROUPS)
                or set(part.lower().split()) <= topics.ENTRY_WORDS):
            continue
        out.append(part)
    return out


def _end(confidence: float = 0.85, group: str = "obj") -> Handler:
    def handle(m: re.Match[str], clause: str) -> Found | str | None:
        objects = _objects(m[group])
        if not objects:
            taken = _taken_over(clause)  # "stepped back from it, my saturdays are ..."
            if taken:
                return taken[0]
            return VAGUE if is_stop_object(clean_object(m[group])[0]) else None
        clause = re.sub(r"\s+(?:was|is)$", "", clause)  # "my last day at X was <date>"
        if not re.match(r"^(?:i|we)\b", clause, re.I) and m.re.pattern.startswith(_WHO):
            clause = f"I {clause[:1].lower()}{clause[1:]}"  # the speaker left out
            m = m.re.match(clause) or m
        # Several objects: one end each, in the clause's words ("The user axed Hulu").
        ends = [Found(third_person(clause if len(objects) == 1
                                   else f"{clause[:m.start(group)]}{obj}"),
                      "fact", topics.end_key(obj), None, confidence, change=True)
                for obj in objects]
        ends += _taken_over(clause)
        return Found(ends[0].content, "fact", ends[0].slot, None, confidence, change=True,
                     also=ends[1:])

    return handle


# "my saturdays are fully eaten by coaching", "my evenings are taken up by the baby": a
# recurring time given over to something new, so what the user did then has ended.
_TAKEN_OVER = re.compile(
    r"\b(?:my|our)\s+(?P<obj>(?:mon|tues|wednes|thurs|fri|satur|sun)days|weekends|evenings|"
    r"mornings|nights|lunch\s+breaks)\s+(?:are|have\s+been|got)\s+(?:now\s+)?(?:fully\s+|"
    r"completely\s+|totally\s+|basically\s+|all\s+)?(?:eaten|taken|swallowed|used|filled|"
    r"consumed|booked|spoken\s+for)(?:\s+up)?\s+(?:by|with)\s+.+$", re.I)


def _taken_over(clause: str) -> list[Found]:
    """The end of what the user did at a time now given over to something else, said on its
    own: "The user's saturdays are fully eaten by coaching soccer"."""
    m = _TAKEN_OVER.search(clause)
    if m is None:
        return []
    said = third_person(clause[m.start():])
    return [Found(said[:1].upper() + said[1:], "fact", topics.end_key(m["obj"]), None, 0.8,
                  change=True)]


def _streak(m: re.Match[str], clause: str) -> Found | None:
    obj = _objects(m["obj"])
    if not obj:
        return None
    content = f"The user has gone {m['n']} without {m['obj']}"
    return Found(content, "fact", topics.end_key(obj[0]), None, 0.8, change=True)


def _left_for(m: re.Match[str], clause: str) -> Found | str | None:
    """"left Uber for a PM role at Airbnb": the new employer, in the speaker's words."""
    if not re.match(r"^(?:i|we)\b", clause, re.I):
        clause = f"I {clause[:1].lower()}{clause[1:]}"  # the speaker left out
        m = m.re.match(clause) or m
    return NEW_ORG(m, clause)


def _divorced(clause: str) -> Found:
    content = third_person(re.sub(r"^the\s+divorce\b", "my divorce", clause, flags=re.I))
    return Found(content, "fact", topics.end_key("married"), None, 0.85, change=True)


# Verbs that end a state the user had, with what ended as their object.
_ENDING = (r"(?:cancell?ed|cancel|axed|ditched|quit|stopped|ended|gave\s+up|given\s+up|shut\s+down|"
           r"got\s+rid\s+of|unsubscribed\s+from|dropped\s+out\s+of|step(?:ped)?\s+(?:back|down|away)"
           r"\s+from|walked\s+away\s+from|retired\s+from|let\s+go\s+of|moved\s+on\s+from|"
           r"broke\s+up\s+with|split\s+(?:up\s+)?with|said\s+goodbye\s+to|cut\s+out|"
           r"finished\s+with|wrapped\s+up|closed\s+down|left|gave\s+away|given\s+away|"
           r"donated|kicked)")

# The speaker, said or left out ("cancelled my membership lol").
_WHO = r"^(?:(?:i|we)\s+)?"

PATTERNS: list[tuple[re.Pattern[str], Handler]] = [
    # "left Uber in august for a PM role at Airbnb", "quit Acme to join Globex": not an end
    # but a new employer, which takes the old one's place
    (rx(_WHO, HAVE, A, r"(?:left|quit)\s+(?-i:[A-Z])[\w&'.-]*(?:\s+(?-i:[A-Z])[\w&'.-]*)?",
        r"(?:\s+(?:in|last|this|back\s+in)\s+\w+)?\s+(?:for\s+(?:(?:a|an|the)\s+(?:[\w-]+\s+){0,3}?",
        r"(?:role|job|position|gig|offer|spot)\s+(?:at|with)\s+)?|to\s+(?:join|work\s+at|go\s+to)\s+)",
        r"(?P<v>(?-i:[A-Z]).+)$"), lambda m, clause: _left_for(m, clause)),
    # "replaced my Pixel 7 with an iPhone 15": the old one ended
    (rx(_WHO, HAVE, r"(?:finally\s+|just\s+)?", A, r"replaced\s+(?P<obj>.+?)\s+with\s+.+$"),
     _end()),
    (rx(_WHO, HAVE, r"(?:had\s+to\s+|finally\s+|officially\s+|just\s+)*", A, _ENDING,
        r"\s+(?P<obj>.+)$"), _end()),
    # "the old T480 went to my nephew", "RIP to my phone": a thing given away, or gone
    (rx(r"^(?:my|our|the)\s+old\s+(?P<obj>[\w'.+-]+(?:\s+[\w'.+-]+){0,2}?)\s+(?:went|has\s+gone|",
        r"is\s+going)\s+to\s+(?:my|our|a|an|the|some)\b.*$"), _end(0.8)),
    (rx(r"^(?:rip|r\.i\.p\.?)\s+(?:to\s+)?(?P<obj>(?:my|our)\s+[\w'.+-]+(?:\s+[\w'.+-]+)?)",
        r"(?=\s*[,.!:;]|\s+(?:it|he|she|they|which)\b|$).*$"), _end(0.8)),
    (rx(r"^(?:i|we)\s+(?:am|are)\s+", A, r"(?:done|finished|through|off)\s+(?:with\s+)?(?P<obj>.+?)",
        r"(?:\s+(?:for\s+good|now|at\s+last|finally))?$"), _end()),
    # "62 days without a cigarette", "a month off sugar", "3 weeks sober from gambling"
    (rx(r"^(?:i\s+am\s+|i\s+have\s+(?:gone|been)\s+)?(?P<n>(?:\d+|a|an|one|two|three|four|five|",
        r"six|seven|eight|nine|ten)\s+(?:days?|weeks?|months?|years?))\s+(?:without|free\s+of|",
        r"off|clean\s+from|sober\s+from)\s+(?P<obj>(?:(?:a|an|any)\s+)?[\w'-]+)\b.*$"), _streak),
    # "today was my last day at Deloitte", "handed in my badge at Acme"
    (rx(r"^(?:(?:today|yesterday|friday|it|that|this|\w+day)\s+(?:was|is)\s+my\s+last\s+",
        r"(?:day|shift|week)|my\s+last\s+(?:day|shift|week)(?=\s+(?:at|with|for)\s+\S+",
        r"(?:\s+\S+)?\s+(?:was|is)\b)|i\s+(?:have\s+)?(?:handed|turned)\s+in\s+my\s+(?:badge|notice|",
        r"keys|resignation|laptop))\s+(?:at|with|for)\s+(?P<obj>(?-i:[A-Z])[\w&'.-]*",
        r"(?:\s+(?-i:[A-Z])[\w&'.-]*)?)\b.*$"), _end(0.85)),
    # "I haven't touched my guitar since March", "haven't had a drink in weeks"
    (rx(I, r"have\s+not\s+", A, r"(?:touched|had|played|used|opened|smoked|done)\s+",
        r"(?P<obj>.+?)(?:\s+(?:since|in|for)\b.*)?$"), _end(0.75)),
    # "I don't bowl anymore": the activity is the object
    (rx(I, A, r"(?:do\s+not|don't|no\s+longer)\s+(?P<obj>[a-z]+)(?:\s+any\s?more|",
        r"\s+any\s+longer)(?:,?\s+(?:and|but|so)\b.*)?$"), _end(0.8)),
    # "Tess and I are done", "Sam and I broke up": a partner, by name
    (rx(r"^(?P<obj>(?-i:[A-Z][\w'-]+))\s+and\s+i\s+(?:are|were|have)?\s*(?:officially\s+|finally\s+)?",
        r"(?:done|over|through|finished|broke\s+up|split(?:\s+up)?|separated|divorced|",
        r"called\s+it\s+quits|broken\s+up)\b.*$"), _end(0.8)),
    # "they switched me off metoprolol onto diltiazem", "my doctor took me off statins", "her
    # first move was getting us off the wiki and onto a new tool": someone moved the user off
    (rx(r"^(?:[\w'-]+\s+){0,6}?(?:have\s+|has\s+)?(?:switched|switching|took|taken|taking|",
        r"moved|moving|got|gotten|getting|put|putting)\s+(?:me|us)\s+off\s+(?:of\s+)?",
        r"(?P<obj>[\w-]+(?:\s+(?!and\b)[\w-]+)?)",
        r"(?=\s+(?:and\s+)?(?:onto|to|for|because|since|after)\b|\s+and\b|\s*,|$).*$"), _end(0.8)),
    # "we moved off Jira and onto Linear", "I switched off the pill to an IUD": off one, onto
    # another
    (rx(r"^(?:i|we)\s+(?:have\s+)?(?:finally\s+|just\s+)?(?:switched|moved|migrated|came|got|",
        r"transitioned)\s+off\s+(?:of\s+)?(?P<obj>[\w-]+(?:\s+(?!and\b)[\w-]+)?)",
        r"\s+(?:and\s+)?(?:onto|to|over\s+to)\b.*$"), _end(0.8)),
    # "the divorce was finalized", "I'm officially divorced": the marriage ended
    (rx(r"^(?:(?:my|our|the)\s+divorce\s+(?:was|got|is|has\s+been)\s+(?:officially\s+|finally\s+)?",
        r"(?:finali[sz]ed|final|official|through|done)|i\s+am\s+(?:officially\s+|now\s+|finally\s+)*",
        r"divorced)(?P<obj>)\b.*$"), lambda m, clause: _divorced(clause)),
    # "I no longer volunteer at the shelter", "I don't go to the gym anymore", "I'm not in the
    # book club anymore": a habit or a membership, by what it is at or in
    (rx(r"^i\s+(?:(?:do\s+not|don't)\s+(?P<v1>[a-z]+)\s+(?:(?:to|at|in|on|for|with)\s+)?",
        r"(?P<o1>.+?)(?:\s+any\s?more|\s+any\s+longer)|no\s+longer\s+(?P<v2>[a-z]+)\s+",
        r"(?:(?:to|at|in|on|for|with)\s+)?(?P<o2>.+?)(?:\s+any\s?more)?|am\s+(?:not|no\s+longer)\s+",
        r"(?:in|on|with|part\s+of|a\s+member\s+of|at)\s+(?P<o3>.+?)(?:\s+any\s?more|\s+any\s+longer)?)",
        r"$"), lambda m, clause: _end(0.8, next(g for g in ("o1", "o2", "o3") if m[g]))(m, clause)),
    # "we lost Biscuit last week", "we had to put Rufus down": a pet or a person, by name
    (rx(r"^(?:i|we)\s+(?:just\s+|finally\s+)?(?:lost|had\s+to\s+put|put)\s+(?:(?:my|our)\s+",
        r"(?:[a-z]+\s+){0,2})?(?P<obj>(?-i:[A-Z])[\w'-]+)(?:\s+down)?\b.*$"), _end(0.8)),
    # "Sunset Lanes closed for good", "the league dissolved", "Pepper passed away"
    (rx(r"^(?:(?:the|our|my)\s+)?(?P<obj>(?:[\w'&-]+\s+){0,2}?[\w'&-]+)\s+(?:has\s+|have\s+)?",
        r"(?:just(?:\.{2,}|…)?\s+)?(?:closed\s+(?:for\s+good|down|permanently)|shut\s+down|dissolved|",
        r"folded|disbanded|passed\s+away|died|was\s+put\s+down|went\s+under|",
        r"(?:is|was|got)\s+(?:cancell?ed|discontinued|over\s+for\s+good))",
        r"(?:\s*[,;].*|\s+(?:and|so|but)\b.*)?$"), _end(0.8)),
    # "my saturdays are fully eaten by coaching now", said with no other end
    (re.compile(r"^.*?" + _TAKEN_OVER.pattern, re.I),
     lambda m, clause: next(iter(_taken_over(clause)), None)),
]
