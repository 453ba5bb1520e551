"""Who the user is: name and preferred name, where they live, employer, occupation, age, diet,
and "my X is Y". All single-valued: a new value supersedes the old one."""

from __future__ import annotations

import re
from collections.abc import Callable

from strata.ingest.rules.base import (
    VAGUE, HAVE, A, I, NUMBER, Found, Handler, clean_object, is_stop_object, parse_number, rx, snake,
    value_of,
)
from strata.ingest.rules.person import third_person
from strata.ingest.rules.states import KIN, USER, content_of
from strata.ingest.rules.text import squash
from strata.write.values import normalize_value

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
    "cashier clerk secretary assistant banker trader investor ux pm phd postdoc dev eng "
    "carrier cook principal hygienist welder paralegal caregiver nanny teller "
    "bartender server hairdresser hairstylist stylist barber realtor agent broker "
    "counselor counsellor midwife dietitian nutritionist optometrist radiologist "
    "anesthesiologist pediatrician superintendent janitor custodian "
    "foreman supervisor inspector auditor underwriter adjuster planner coordinator "
    "strategist copywriter illustrator animator programmer roofer landscaper "
    "gardener baker butcher cop detective sergeant lieutenant captain sheriff "
    "deputy ranger guard attendant steward stewardess dispatcher trucker courier "
    "postman mailman carpenter machinist welder operator associate partner "
    "representative rep doc rn np pa emt cna lpn md prof attorney cpa swe sde tech bookkeeper "
    "receptionist doula pastor rabbi priest chaplain aide housekeeper cleaner "
    "actuary notary surveyor archivist curator sommelier florist jeweler tailor locksmith "
    "optician chiropractor physiotherapist physio judge diplomat lobbyist geologist "
    "ecologist botanist astronomer meteorologist archaeologist anthropologist sociologist "
    "linguist historian novelist poet screenwriter composer pianist violinist guitarist "
    "sculptor potter tattooist mason bricklayer seamstress fisherman rancher miner "
    "lifeguard trainer instructor".split()
)
_ROLE_CUT = re.compile(r"\s+(?:at|for|in|with|who|and|by|from|of|since|on)\b|,", re.I)
PLACE_CUT = re.compile(
    r"\s+(?:with|since|for|because|and|but|where|which|near|now|these\s+days|at\s+the\s+moment|"
    r"currently|to|as)\b", re.I,
)
ORG_CUT = re.compile(r"\s+(?:as|since|in|on|and|but|so|because|where|which|for|now|doing)\b|,",
                     re.I)


def is_role(phrase: str) -> bool:
    head = squash(_ROLE_CUT.split(phrase)[0]).lower()
    words = head.split()
    return bool(words) and len(words) <= 4 and words[-1] in _ROLES


def fact(slot: str | None, confidence: float, cut: re.Pattern[str] | None = None,
          change: bool = False, group: str = "v", kind: str = "fact",
          check: Callable[[str], bool] | None = None, state: str | None = None) -> Handler:
    """``state``: the attribute the clause implies ("started at Stripe": ``employer``), said
    first in the content when the clause does not name it."""
    def handle(m: re.Match[str], clause: str) -> Found | None:
        raw, _ = clean_object(m[group])
        if is_stop_object(raw) or (check is not None and not check(raw)):
            return None
        value = value_of(raw, cut) if slot else None
        if slot and not value:
            return None
        content = third_person(clause)
        if state is not None:
            cut_at = cut.search(raw) if cut is not None else None
            shown = squash(raw[:cut_at.start()] if cut_at else raw)
            content = content_of(USER, state, shown, clause, plain=True)
        return Found(content, kind, slot, value, confidence, change=change)

    return handle


def not_article(raw: str) -> bool:
    return not re.match(r"^(?:a|an|my|our|home|night|nights|the\s+moment|myself)\b", raw, re.I)


_NAME_CUT = re.compile(r"\s+(?:and|but|from|i|by|btw)\b|,", re.I)


def _name_ok(raw: str) -> bool:
    name = _NAME_CUT.split(raw)[0]
    words = name.split()
    return 1 <= len(words) <= 4 and not re.match(
        r"^(?:not|a|an|the|unknown|irrelevant|secret|private|none|nothing|what|that|it)\b", name,
        re.I) and all(re.match(r"^[^\W\d_][\w.'-]*$", w) for w in words)


def _name(slot: str, template: str | None = None, kind: str = "fact") -> Handler:
    def handle(m: re.Match[str], clause: str) -> Found | None:
        raw, _ = clean_object(m["v"])
        if not _name_ok(raw):
            return None
        name = squash(_NAME_CUT.split(raw)[0])
        content = template.format(name=name) if template else third_person(clause)
        return Found(content, kind, slot, normalize_value(name), 0.9 if kind == "fact" else 0.85)

    return handle


_AT_ORG_TAIL = re.compile(r"\s+(?:at|for|with)\s+(?P<org>(?-i:[A-Z0-9])[\w&.'-]*(?:\s+(?-i:[A-Z0-9])"
                          r"[\w&.'-]*){0,3})(?P<rest>.*)$", re.I)


# Capitalised words that follow "I'm" without being a name.
_NOT_A_NAME = frozenset("""
american canadian british english french german spanish italian irish scottish welsh dutch
swiss swedish norwegian danish polish russian ukrainian greek turkish chinese japanese korean
indian mexican brazilian argentinian australian african european asian latino latina jewish
christian catholic muslim hindu buddhist atheist mormon protestant vegan gay lesbian bi trans
okay ok fine good great sorry back here home done ready sure new
""".split())


def _belonging(m: re.Match[str], clause: str) -> Found | None:
    """"I'm Canadian", "I'm Catholic": who the user is, one of many (slotless)."""
    if m["v"].lower() not in _NOT_A_NAME or m["v"].lower() in _NOT_A_GROUP:
        return None
    return Found(third_person(clause), "fact", confidence=0.8)


_NOT_A_GROUP = frozenset("okay ok fine good great sorry back here home done ready sure new vegan".split())


def _introduction(m: re.Match[str], clause: str) -> Found | None:
    """"I'm Robert": a name, unless the capitalised word is a nationality or a faith."""
    name = m["v"]
    if name.lower() in _NOT_A_NAME or is_role(name):
        return None
    return Found(f"The user's name is {name}", "fact", "user.name", normalize_value(name), 0.8)


def _introduction_with_age(m: re.Match[str], clause: str) -> Found | None:
    """"I'm Jess, 29": a name and an age, the way people introduce themselves."""
    found = _introduction(m, clause)
    age = parse_number(m["n"])
    if found is None or not 1 <= age <= 120:
        return None
    found.also.append(Found(f"The user is {age} years old", "fact", "user.age", str(age), 0.8))
    return found


_ANOTHER_CLAUSE = re.compile(r"^\s*(?:[,;:]|\s(?:and|but|so)\s)", re.I)


def _occupation(m: re.Match[str], clause: str) -> Found | None:
    raw, _ = clean_object(m["v"])
    if not is_role(raw):
        return None
    value = normalize_value(_ROLE_CUT.split(raw)[0])
    org = _AT_ORG_TAIL.search(raw)
    # "I'm a data scientist at Spotify, explain X to me": the request after it is no fact.
    if org is None or org["rest"].strip() and not _ANOTHER_CLAUSE.match(org["rest"]):
        return Found(third_person(clause), "fact", "user.occupation", value, 0.8)
    # "I'm a data engineer at Acme": the role and the employer, two facts; a student's is a
    # school ("I'm a grad student at Purdue").
    role = raw[:org.start()]
    where = (Found(f"The user goes to {org['org']}", "fact", "user.school",
                   normalize_value(org["org"]), 0.8) if _STUDENT.search(role) else
             Found(f"The user works at {org['org']}", "fact", "user.employer",
                   normalize_value(org["org"]), 0.8))
    return Found(f"The user is {_article(role)} {role}", "fact", "user.occupation", value, 0.8,
                 also=[where])


_STUDENT = re.compile(r"\b(?:student|freshman|sophomore|junior|senior|undergrad|phd|postdoc)$",
                      re.I)


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _work_as(m: re.Match[str], clause: str) -> Found | None:
    raw, _ = clean_object(m["v"])
    value = normalize_value(_ROLE_CUT.split(raw)[0])
    if not value or len(value.split()) > 5:
        return None
    return Found(third_person(clause), "fact", "user.occupation", value, 0.85)


def _age(change: bool) -> Handler:
    def handle(m: re.Match[str], clause: str) -> Found | None:
        age = parse_number(m["n"])
        if not 1 <= age <= 120:
            return None
        return Found(third_person(clause), "fact", "user.age", str(age), 0.85, change=change)

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


_PERSON_X = re.compile(rf"^(?:\w+\s+)?{KIN}$", re.I)


def _my_x_is_y(m: re.Match[str], clause: str) -> Found | None:
    x = squash(m["x"])
    if _PERSON_X.match(x) or any(w[:1].isupper() for w in x.split()):
        # "my wife is pregnant", "my coworker Ben is moving": about a person, not an
        # attribute of the user's (their attributes have keys of their own).
        return None
    raw, _ = clean_object(m["y"])
    if _MY_X_STOP.match(x) or _MY_Y_STOP.match(raw) or is_stop_object(raw):
        return VAGUE
    if len(raw.split()) > 8:
        return None
    value = normalize_value(raw)
    if not value:
        return None
    return Found(third_person(clause), "fact", f"user.{snake(x)}", value, 0.7)


NEW_ORG = fact("user.employer", 0.85, ORG_CUT, change=True, check=not_article, state="employer")
# "moved over from QA to product manager" is a new job, not a new city.
NEW_PLACE = fact("user.location", 0.85, PLACE_CUT, change=True,
                 check=lambda raw: not_article(raw) and not is_role(raw), state="location")


_JOB_AT = re.compile(r"^(?:my|the|our)\s+(?:job|position|role|gig|post)\s+(?:at|with|in)\s+", re.I)


def _now_at(m: re.Match[str], clause: str) -> Found | None:
    """"I'm now at Globex": the new employer, said the way a question about work finds it."""
    found = NEW_ORG(m, clause)
    if not isinstance(found, Found):
        return found
    org = _ORG_NAME.match(m["v"])
    found.content = f"The user now works at {org.group() if org else m['v']}"
    return found


_ORG_NAME = re.compile(r"(?-i:[A-Z0-9])[\w&.'-]*(?:\s+(?-i:[A-Z0-9])[\w&.'-]*){0,3}")


def _left(m: re.Match[str], clause: str) -> Found | None:
    """"I left Acme": the employer Acme no longer holds (a negation: no value)."""
    raw, _ = clean_object(m["v"])
    raw = _JOB_AT.sub("", raw)
    org = value_of(raw, ORG_CUT)
    if not org or is_stop_object(raw) or not not_article(raw) or len(org.split()) > 4:
        return None
    # An event (leaving happened at a time) that retires the employer it names.
    return Found(third_person(clause), "event", "user.employer", None, 0.8, change=True)


def _new_role(m: re.Match[str], clause: str) -> Found | None:
    raw, _ = clean_object(m["v"])
    if not is_role(raw):
        return None
    shown = squash(_ROLE_CUT.split(raw)[0])
    return Found(content_of(USER, "occupation", shown, clause, plain=True), "fact",
                 "user.occupation", normalize_value(shown), 0.85, change=True)


IN_PLACE = fact("user.location", 0.85, PLACE_CUT, check=not_article)
# "I lived in Munich in 2024": where the user lived, a state that has ended.
# "getting a bike for commuting here in Austin": the speaker is where they say "here" is.
_HERE_IN = re.compile(r"\bhere\s+in\s+(?P<v>(?-i:[A-Z])[\w'.-]*(?:\s+(?!I\b)(?-i:[A-Z])[\w'.-]*)"
                      r"{0,2})")


def here_in(clause: str) -> Found | None:
    """Where the user lives, said in passing by a clause about something else ("the bike
    lanes here in Austin are great"): its own fact, so the place is keyed as the user's
    home whatever the clause was about."""
    m = _HERE_IN.search(clause)
    if m is None:
        return None
    place = m["v"].rstrip(".'")
    return Found(f"The user lives in {place}", "fact", "user.location", normalize_value(place),
                 0.75)


LIVED_IN = re.compile(r"^(?:i|we)\s+(?:lived|resided|was\s+living|were\s+living)\s+in\s+", re.I)
AT_ORG = fact("user.employer", 0.85, ORG_CUT, check=not_article)

# What the user eats by rule, in the words of a way of eating: one value of ``user.diet``.
_DIET = (r"(?P<v>vegetarian|vegan|pescatarian|pescetarian|keto|ketogenic|paleo|whole30|"
         r"carnivore|low[- ]carb|low[- ]fat|plant[- ]based|mediterranean|flexitarian|atkins)\b")
_DIET_HOW = (r"(?:(?:fully|completely|totally|full|strict|strictly|mostly|basically|pretty\s+much)"
             r"\s+)?")

PATTERNS: list[tuple[re.Pattern[str], Handler]] = [
    # facts about oneself
    (rx(r"^my\s+(?:full\s+|real\s+|first\s+)?name\s+is\s+(?P<v>.+)$"), _name("user.name")),
    (rx(I, r"am\s+(?:called|named)\s+(?P<v>.+)$"),
     _name("user.name", "The user's name is {name}")),
    (rx(r"^(?:please\s+)?(?:you\s+can\s+|you\s+may\s+|just\s+)?(?:please\s+)?call\s+me\s+(?P<v>.+)$"),
     _name("user.preferred_name", "The user wants to be called {name}", "preference")),
    (rx(I, A, r"(?:live|reside)\s+in\s+(?P<v>.+)$"), IN_PLACE),
    (rx(I, r"am\s+", A, r"(?:living|based|located|residing)\s+in\s+(?P<v>.+)$"), IN_PLACE),
    (rx(I, A, r"work\s+as\s+(?:a|an|the)\s+(?P<v>.+)$"), _work_as),
    (rx(I, A, r"work\s+(?:at|for)\s+(?P<v>.+)$"), AT_ORG),
    (rx(I, r"am\s+", A, r"(?:working|employed)\s+(?:at|for|by)\s+(?P<v>.+)$"), AT_ORG),
    (rx(I, r"(?:have\s+)?", A, r"(?:started|begun|began)\s+",
         r"(?:working|a\s+new\s+job|a\s+job|my\s+new\s+job)\s+(?:at|for|with)\s+(?P<v>.+)$"),
     fact("user.employer", 0.85, ORG_CUT, change=True, check=not_article, state="employer")),
    # a new employer said plainly: "joined Stripe", "I'm now at Globex", "new job at Acme"
    (rx(I, HAVE, A, r"(?:joined|started\s+at|moved\s+to\s+a\s+job\s+at|been\s+hired\s+by|",
        r"got\s+(?:a\s+|the\s+)?(?:new\s+)?job\s+(?:at|with)|signed\s+(?:on\s+)?with|",
        r"accepted\s+(?:an?\s+)?(?:job\s+)?offer\s+(?:from|at))\s+(?P<v>.+)$"), NEW_ORG),
    (rx(I, r"am\s+", A, r"now\s+(?:working\s+)?(?:at|with|for)\s+(?P<v>(?-i:[A-Z0-9]).+)$"),
     _now_at),
    (rx(r"^(?:i\s+have\s+)?(?:a\s+|my\s+)?new\s+job\s+(?:at|with)\s+(?P<v>.+)$"), NEW_ORG),
    (rx(I, HAVE, A, r"(?:left|resigned\s+from|quit|was\s+laid\s+off\s+(?:from|by)|",
        r"got\s+laid\s+off\s+(?:from|by))\s+(?P<v>.+)$"), _left),
    # a new home said plainly: "we relocated to Porto", "now based in Lyon"
    (rx(r"^(?:i|we)\s+", HAVE, A, r"(?:moved|relocated|moved\s+house)\s+(?:back\s+)?",
        r"(?:from\s+.+?\s+)?to\s+(?P<v>.+)$"), NEW_PLACE),
    (rx(r"^(?:i|we)\s+(?:am|are)\s+", A, r"now\s+(?:living|based|located)\s+in\s+(?P<v>.+)$"),
     NEW_PLACE),
    (rx(I, HAVE, A, r"(?:became|got\s+promoted\s+to|was\s+promoted\s+to|am\s+now)\s+",
        r"(?:(?:a|an|the)\s+)?(?P<v>.+)$"), _new_role),
    (rx(I, HAVE, A, r"(?:went|gone|become|became|turned|switched\s+to|am\s+now)\s+",
        _DIET_HOW, _DIET, r"(?:\s+diet)?$"),
     fact("user.diet", 0.85, change=True)),
    # "been strict keto since thanksgiving", "I've been vegan for 3 years": still so
    (rx(I, r"have\s+been\s+", A, r"(?:on\s+(?:a\s+|the\s+)?)?", _DIET_HOW, _DIET,
        r"(?:\s+diet)?(?:\s+(?:since|for)\b.*?)?(?:,?\s+(?:and|but|so)\b.*)?$"),
     fact("user.diet", 0.8)),
    # "I'm on keto now", "we're doing the mediterranean diet"
    (rx(r"^(?:i|we)\s+(?:am|are)\s+", A, r"(?:on|doing|eating|following)\s+(?:a\s+|the\s+)?",
        _DIET_HOW, _DIET, r"(?:\s+diet)?(?:\s+(?:now|these\s+days|again))?",
        r"(?:,?\s+(?:and|but|so)\b.*)?$"), fact("user.diet", 0.8)),
    # "my doctor wants me eating Mediterranean", "she put me on a low-carb diet": the
    # doctor's orders are what the user eats now
    (rx(r"^(?:my\s+[\w-]+|he|she|they)\s+(?:\w+\s+)?(?:wants|has|had|put|switched|moved)\s+",
        r"me\s+(?:on|onto|eating|to)\s+(?:a\s+|the\s+)?", _DIET_HOW, _DIET, r"\b.*$"),
     fact("user.diet", 0.75, change=True)),
    (rx(I, r"am\s+(?P<v>(?-i:[A-Z][a-z]+))$"), _introduction),
    (rx(I, r"am\s+(?P<v>(?-i:[A-Z][a-z]+)),\s+(?P<n>\d{1,3})(?:\s+years?\s+old|\s*y/?o)?$"),
     _introduction_with_age),
    (rx(I, r"am\s+", A, r"(?:a\s+|an\s+)?(?P<v>[a-z]+)$"), _belonging),
    (rx(I, r"(?:am|have\s+been)\s+", A, r"(?:a\s+)?", _DIET_HOW, _DIET,
        r"(?:\s+(?:now|these\s+days|again)|\s+(?:for|since|and)\s+.+)?$"),
     fact("user.diet", 0.85)),
    (rx(I, r"am\s+", A, r"(?:a|an|the)\s+(?P<v>.+)$"), _occupation),
    (rx(I, r"am\s+(?:now\s+)?(?P<n>", NUMBER, r")(?:\s+years?(?:\s+old)?|\s+y/?o)?",
        r"(?:\s+(?:now|today|already))?$"), _age(False)),
    (rx(I, r"(?:have\s+)?", A, r"turned\s+(?P<n>", NUMBER, r")$"), _age(True)),
]

MY_X_IS_Y: list[tuple[re.Pattern[str], Handler]] = [
    (rx(r"^my\s+(?P<x>[a-z][a-z'-]*(?:\s+[a-z][a-z'-]*){0,2}?)\s+(?:is|are)\s+(?P<y>.+)$"),
     _my_x_is_y),
]
