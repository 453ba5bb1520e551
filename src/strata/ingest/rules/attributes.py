"""An attribute of anyone: where someone lives, works, studies, what they do, how old they
are, whether they are engaged or married, expecting a baby or had it, their manager, and the
phone, car or laptop they have -- of the user or of a person in their life, named ("my
sister Dana", "Dana") or by relation ("my dad", "Dad"), said plainly or told through an
event that implies it ("we closed on a house in Austin", "Noor blew out seven candles", "got
bumped up to sous chef", "finished nursing school", "her little one arrived"), said aside
("opening shift (barista at Blue Bottle)"), or taken for granted by a question ("how do I ...
on my Pixel 7?": ``owned_in_question``).

The key comes from the statement's shape, not from a list of people:
``user.<attribute>`` or ``person.<who>.<attribute>`` (``strata.write.slots.attribute_key``),
so a later value of one person's attribute supersedes the earlier one, and another
attribute, or another person's, never does. A past state ("when I lived in Denver", "my
first car was a Corolla") has no pattern here: the screen and the tense keep it history.

Where a clause implies a state without naming it ("Dana's officially a Boise resident"),
the content says the state first, in the words a question about it uses ("Dana lives in
Boise"), and keeps what was said after it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from strata.ingest.rules.base import NUMBER, Found, Handler, clean_object, parse_number, rx
from strata.ingest.rules.identity import is_role
from strata.ingest.rules.person import third_person
from strata.ingest.rules.states import KIN as _KIN, USER, Subject, content_of, state_of
from strata.ingest.rules.text import REPORTED, squash
from strata.write.slots import RELATIONS, attribute_key
from strata.write.values import normalize_value

# Who a statement is about. A relation word, optionally with a name after it ("my sister
# Dana"); a name alone; or the speaker.
_KIN_MOD = r"(?:(?:older|younger|little|big|baby|twin|oldest|youngest|eldest|middle|new)\s+)?"
_NAME_WORD = r"(?-i:[A-Z][a-z][\w'-]*)"
_KIN_NAMES = r"mom|mum|dad|grandma|grandpa|granny|nana|gramps"  # a relation said as a name
_SOMEONE = (rf"(?P<who>(?:my|our)\s+{_KIN_MOD}(?P<rel>{_KIN})(?:\s+(?P<named>{_NAME_WORD}))?"
            rf"|(?P<bare>{_NAME_WORD})|(?P<kinword>{_KIN_NAMES}))")  # anyone but the user
_WHO = (
    rf"(?P<who>(?:my|our)\s+{_KIN_MOD}(?P<rel>{_KIN})(?:\s+(?P<named>{_NAME_WORD}))?"
    rf"|(?P<bare>{_NAME_WORD})|(?P<kinword>{_KIN_NAMES})"
    rf"|(?P<me>i|we|me\s+and\s+(?:my|our)\s+\w+(?:\s+\w+){{0,2}}?"
    rf"|(?:my|our)\s+\w+(?:\s+\w+){{0,2}}?\s+and\s+i|{_NAME_WORD}\s+and\s+i))"
)
# Capitalised words that open a clause without naming a person.
_NOT_NAMES = frozenset("""
i it this that there here what who he she they we you my our his her their its the a an
today tomorrow yesterday tonight monday tuesday wednesday thursday friday saturday sunday
january february march april may june july august september october november december
everyone everybody someone somebody nobody people nothing everything something life work
school home also just so but and or then still now well ok okay oh yeah yes no hey hi lol
omg ugh welp update anyway btw
""".split())
_CAPITAL_KIN = {"dad", "daddy", "mom", "mum", "mommy", "mummy", "mama", "papa", "grandpa",
                "grandma", "granny", "nana", "gramps", "grandad", "granddad"}


def subject(m: re.Match[str]) -> Subject | None:
    """The person a match is about, or None when its capitalised opening word is no name."""
    g = m.groupdict()
    if g.get("me") or g.get("dropped") is not None:
        return Subject(None, "The user")
    if g.get("bare") or g.get("kinword"):
        word = g.get("bare") or g["kinword"]
        low = word.lower()
        if low in _CAPITAL_KIN:
            canonical = RELATIONS.get(low, low)
            said = f"The user's {low}" + (f" ({canonical})" if canonical != low else "")
            return Subject(canonical, said)
        if low in _NOT_NAMES:
            return None
        return Subject(low, word)
    named = g.get("named")
    if named and named.lower() in _NOT_NAMES:
        return None
    rel_said = squash(g.get("rel") or "")
    said = " ".join(w for w in ("The user's", rel_said, named or "") if w)
    if named:
        return Subject(named.lower(), said if rel_said else named)
    if not rel_said:
        return None
    rel = re.sub(r"[\s-]+", "_", rel_said.lower()).replace("é", "e")
    rel = re.sub(r"^(?:best|close|old|good)_", "", rel)
    return Subject(RELATIONS.get(rel, rel), said)


# --- values -------------------------------------------------------------------------------

_PLACE = r"(?P<v>(?-i:[A-Z])[\w.'-]*(?:[\s-]+(?-i:[A-Z])[\w.'-]*){0,3})"
# A name: "started at 9" is a time, not an employer.
_ORG = r"(?P<v>(?:the\s+)?(?-i:[A-Z])[\w&.'-]*(?:\s+(?-i:[A-Z0-9&])[\w&.'-]*){0,3})"
# An employer named by name ("Figma", "the Mercy ER") or as a place of work ("the hospital").
_WORKPLACE = (r"(?P<v>(?:the\s+)?(?-i:[A-Z])[\w&.'-]*(?:\s+(?-i:[A-Z0-9&])[\w&.'-]*){0,3}|"
              r"the\s+(?:\w+\s+)?(?:hospital|clinic|school|university|library|station|bank|"
              r"restaurant|bakery|cafe|shop|store|factory|plant|warehouse|airport|firm|office|"
              r"agency|lab|museum|hotel|gym|studio|practice|pharmacy|startup|nonprofit))")
_SCHOOL_WORD = (r"(?:school|elementary|middle|high|academy|university|college|prep|montessori|"
                r"institute|preschool|daycare|kindergarten|uni)")
# A trip is not a home: "I'm in Chicago this week", "Dana is in Boise until Sunday".
_VISIT = re.compile(r"\b(?:this|next|for\s+the|until|till|through|over\s+the|for\s+a|for\s+\w+"
                    r"\s+(?:days?|weeks?|nights?)|on\s+(?:a\s+)?(?:trip|vacation|holiday|"
                    r"business)|visiting|tonight|today|right\s+now|at\s+the\s+moment)\b", re.I)
_REST = r"(?P<rest>(?:[\s,(].*)?)$"
# Where a title ends ("VP of Sales" keeps its "of").
_ROLE_END = re.compile(r"\s+(?:at|for|in|with|who|and|by|from|since|on|so|but|because|"
                       r"which|now|today|yesterday|last|this|next)\b|[,(]", re.I)


def _role_value(raw: str) -> str | None:
    raw = squash(_ROLE_END.split(raw)[0])
    value = normalize_value(raw)
    if not value or len(value.split()) > 5 or re.match(r"^(?:a|an|the|my|his|her|it)\b", value):
        return None
    return value


# --- handlers -----------------------------------------------------------------------------

Value = Callable[[re.Match[str]], "tuple[str, str] | None"]  # (stored value, as shown)


def _text(group: str = "v", words: int = 5) -> Value:
    def read(m: re.Match[str]) -> tuple[str, str] | None:
        raw, _ = clean_object(m[group])
        value = normalize_value(raw)
        if not value or len(value.split()) > words:
            return None
        return value, re.sub(r"^(?:the|a|an)\s+", "", raw, flags=re.I)

    return read


def _model(m: re.Match[str]) -> tuple[str, str] | None:
    """A device's model as said, lowercase: "iPhone" stays ``iphone`` (the lexicon would read
    it as the OS)."""
    raw = re.sub(r"^(?:the|a|an)\s+", "", squash(clean_object(m["v"])[0]), flags=re.I)
    value = squash(raw.lower())
    if not value or len(value.split()) > 4:
        return None
    return value, raw


def _age(m: re.Match[str]) -> tuple[str, str] | None:
    age = parse_number(m["n"])
    return (str(age), str(age)) if 0 < age <= 120 else None


def _role(m: re.Match[str]) -> tuple[str, str] | None:
    value = _role_value(m["v"])
    return (value, squash(_ROLE_END.split(m["v"])[0])) if value else None


def _known_role(m: re.Match[str]) -> tuple[str, str] | None:
    raw = squash(_ROLE_END.split(m["v"])[0])
    return _role(m) if is_role(raw) else None


_SCHOOL = re.compile(rf"\b{_SCHOOL_WORD}\b", re.I)
_CHILD = re.compile(r"^(?:(?:step|grand)?(?:son|daughter|kid|kiddo|child|twin|baby)s?)$", re.I)


def _school(m: re.Match[str]) -> tuple[str, str] | None:
    """A school by its name ("Hillcrest Middle School"), or anything a child goes to."""
    rel = (m.groupdict().get("rel") or "").lower()
    if not (_SCHOOL.search(m["v"]) or _CHILD.match(rel)):
        return None
    return _text()(m)


def _school_or_work(also: Also | None = None) -> Handler:
    """"Zoe is at NYU now", "Leo's first week at Hillcrest Middle": a school for a school's
    name or a child, else an employer -- and always an employer when a role is said ("first
    week as vice principal at Westbrook")."""

    def handle(m: re.Match[str], clause: str) -> Found | str | None:
        g = m.groupdict()
        school = not g.get("role") and (
            _SCHOOL.search(m["v"]) or _CHILD.match((g.get("rel") or "").lower()))
        name = "school" if school else "employer"
        return attribute(name, _text(words=4), change=True, plain=False,
                         also=None if school else also)(m, clause)

    return handle


# What a field's training or credential makes someone: "finished nursing school", "passed
# the bar". A role's own name ("his NP program", "got her RN") needs no entry.
_FIELD_ROLE = {
    "nursing": "nurse", "law": "lawyer", "bar": "lawyer", "med": "doctor", "medical": "doctor",
    "dental": "dentist", "pharmacy": "pharmacist", "culinary": "chef", "teaching": "teacher",
    "police": "police officer", "vet": "veterinarian", "veterinary": "veterinarian",
    "cosmetology": "hairstylist", "flight": "pilot", "pilot's": "pilot", "nclex": "nurse",
    "real estate": "realtor", "cdl": "truck driver", "paramedic": "paramedic",
}
_NOT_WORK = frozenset({"phd", "student", "intern", "postdoc"})  # a degree, not a job


def _trained(m: re.Match[str], field: str | None = None) -> tuple[str, str] | None:
    """The role a finished training or an earned credential makes someone."""
    field = squash(field or m["v"])
    role = _FIELD_ROLE.get(field.lower()) or (field if is_role(field) else None)
    if role is None or role.lower() in _NOT_WORK:
        return None
    return normalize_value(role), role


def _credential(m: re.Match[str]) -> tuple[str, str] | None:
    return _trained(m, m["v"] or m["v2"] or m["v3"])


def _fixed(value: str) -> Value:
    return lambda m: (value, value)


Also = Callable[[re.Match[str], Subject], list[Found]]


def attribute(name: str, read: Value, change: bool = False, plain: bool = True,
              confidence: float = 0.8, visit: bool = False, also: Also | None = None) -> Handler:
    """A handler keying the clause under ``name`` of the person the match is about.
    ``plain``: the clause names the state itself (else the state is said first); ``visit``:
    a trip's words after the value ("this week") make it no home; ``also``: more facts the
    match holds (the employer after a title)."""

    def handle(m: re.Match[str], clause: str) -> Found | None:
        s = subject(m)
        if s is None:
            return None
        got = read(m)
        if got is None:
            return None
        value, shown = got
        if visit and _VISIT.search(m.groupdict().get("rest") or ""):
            return None
        found = Found(content_of(s, name, shown, clause, plain), "fact",
                      attribute_key(s.who, name), value, confidence, change=change)
        if also is not None:
            found.also = also(m, s)
        return found

    return handle


_MORE_PLACES = re.compile(
    rf"(?:,|\band\b|;)\s*(?:and\s+)?{_WHO}(?:\s+(?:is|are|lives)|'s)\s+(?:(?:living|based)\s+)?"
    rf"in\s+{_PLACE}", re.I)


def _more_places(m: re.Match[str], s: Subject) -> list[Found]:
    """"I'm in Chicago, Eli's in Atlanta, mom's in Charlotte": each person's city."""
    out = []
    for more in _MORE_PLACES.finditer(m.groupdict().get("rest") or ""):
        other = subject(more)
        value = normalize_value(more["v"])
        if other is None or not value or other.who == s.who:
            continue
        out.append(Found(state_of(other, "location", more["v"]), "fact",
                         attribute_key(other.who, "location"), value, 0.75))
    return out


_LIVING_IN = re.compile(rf"\b(?:lives?|living|based)\s+(?:\w+\s+){{0,2}}?in\s+{_PLACE}")


def _living_in(m: re.Match[str], s: Subject) -> list[Found]:
    """"my grandpa's 88, still living alone out in Tucson": where he lives too."""
    more = _LIVING_IN.search(m.groupdict().get("rest") or "")
    value = normalize_value(more["v"]) if more else None
    if not value:
        return []
    return [Found(state_of(s, "location", more["v"]), "fact", attribute_key(s.who, "location"),
                  value, 0.75)]


def _age_and_home(m: re.Match[str], clause: str) -> Found | None:
    """"my grandpa's 88, still living alone out in Tucson, and ...": his age, and where he
    lives as its own fact, said once -- the age keeps the rest of the clause but not the
    home, so a later move leaves no copy of the old one behind."""
    rest = m["rest"] or ""
    home = _LIVING_IN.search(rest)
    if home is not None:
        start = rest.rfind(",", 0, home.start())
        end = rest.find(",", home.end())
        rest = rest[:max(start, 0)] + (rest[end:] if end >= 0 else "")
    told = clause[:m.start("rest")] + rest
    return attribute("age", _age, plain=False, also=_living_in)(m, told)


_TEAM_UNIT = r"(?:\s+(?:people|persons|devs|developers|engineers|folks|members|strong|of\s+us))?"
# After the number, only what closes the statement: "6 people now", "4, mostly backend";
# "2 weeks behind" is no size.
_TEAM_REST = (r"(?P<rest>(?:\s+(?:now|these\s+days|today|total|in\s+total)|\s*[,(!.;].*|"
              r"\s+(?:and|but|so|since|after|which|including)\b.*)?)$")


def _said_by_me(handle: Handler) -> Handler:
    """``handle`` on the clause with the "I" the speaker left out put back ("starting monday
    as a receptionist" -> "I am starting ..."), so what is stored says who."""

    def said(m: re.Match[str], clause: str) -> Found | str | None:
        if m.groupdict().get("dropped") is None:
            return handle(m, clause)
        first = clause.split(maxsplit=1)[0].lower()
        be = first.endswith("ing") or first in ("on", "in", "at", "part")
        return handle(m, f"{'I am' if be else 'I'} {clause[:1].lower()}{clause[1:]}")

    return said


def _team_size(m: re.Match[str], clause: str) -> Found | None:
    """How many people are on the speaker's team: a number, so a later one supersedes it."""
    size = parse_number(m["n"])
    if not 1 < size <= 500:
        return None
    return Found(third_person(clause), "fact", attribute_key(None, "team_size"), str(size),
                 0.8, change=bool(re.search(r"\b(?:now|grew|grown|shrunk|shrank|up|down|"
                                             r"doubled)\b", clause, re.I)))


def _role_and_home(m: re.Match[str], clause: str) -> Found | None:
    """"I'm a UX designer based in Porto, mostly freelance": the role, and where the person
    lives as its own fact -- the role's statement keeps the rest but not the home, so a later
    move leaves no copy of the old one behind (as ``_age_and_home`` does for an age)."""
    role = attribute("occupation", _known_role)
    home = _LIVING_IN.search(m["v"])
    if home is None:
        return role(m, clause)
    start, end = m.start("v") + home.start(), m.start("v") + home.end()
    told = clause[:start].rstrip(" ,") + clause[end:]
    again = m.re.match(told)
    found = role(again, told) if again is not None else None
    s = subject(m)
    value = normalize_value(home["v"])
    if not isinstance(found, Found) or s is None or not value:
        return found
    found.also = [*found.also, Found(state_of(s, "location", home["v"]), "fact",
                                     attribute_key(s.who, "location"), value, 0.75)]
    return found


_WITH_PARTNER = rf"(?:\s*(?:&|and)\s+(?:(?:his|her|their)\s+\w+|{_NAME_WORD}))?"
_BABY_NAMED = re.compile(rf"(?:\bnamed|\bcalled|,)\s+(?P<v>{_NAME_WORD})\b")


def _baby_named(m: re.Match[str], s: Subject) -> list[Found]:
    """"welcomed a baby girl, Ruby", "had their baby, a girl named Ivy": the baby's name,
    its own fact."""
    named = _BABY_NAMED.search(m.groupdict().get("rest") or "")
    value = normalize_value(named["v"]) if named and named["v"].lower() not in _NOT_NAMES else None
    if not value:
        return []
    return [Found(state_of(s, "baby", named["v"]), "fact",
                  attribute_key(s.who, "baby"), value, 0.8)]


def _employer_after(m: re.Match[str], s: Subject) -> list[Found]:
    """"bumped up to sous chef at Marlowe", "first week as vice principal at Westbrook": the
    employer too, its own fact."""
    org = m.groupdict().get("org")
    if not org:
        return []
    value = normalize_value(org)
    if not value:
        return []
    return [Found(state_of(s, "employer", org), "fact", attribute_key(s.who, "employer"), value,
                  0.8)]


def _school_after(m: re.Match[str], s: Subject) -> list[Found]:
    org = m.groupdict().get("org")
    value = normalize_value(org) if org else None
    if not value:
        return []
    return [Found(state_of(s, "school", org), "fact", attribute_key(s.who, "school"), value, 0.8)]


def _role_too(m: re.Match[str], s: Subject) -> list[Found]:
    role = m.groupdict().get("role")
    value = _role_value(role) if role else None
    if not value:
        return []
    return [Found(state_of(s, "occupation", squash(_ROLE_END.split(role)[0])), "fact",
                  attribute_key(s.who, "occupation"), value, 0.8)]


# --- patterns -----------------------------------------------------------------------------

_ADV = (r"(?:(?:now|officially|finally|just|still|currently|already|actually|recently|"
        r"also|apparently|technically)\s+)*")
_BE = rf"(?:\s+(?:is|am|are)|'s)\s+{_ADV}"
_HAS = rf"(?:\s+(?:has|have)\s+|'s\s+){_ADV}"
_LEAD = rf"^(?:(?:so|and|but|also|plus|oh|btw|update|ok|okay)[\s,:]+)?{_WHO}"
_ORG_AT = r"(?:\s+at\s+(?P<org>(?-i:[A-Z0-9])[\w&.'-]*(?:\s+(?-i:[A-Z0-9&])[\w&.'-]*){0,3}))?"
# Where a title ends: at its employer, a time, a reason, or the clause's end.
_ROLE_REST = (r"(?P<rest>(?:\s+(?:last|this|on|in|since|after|so|and|but|which|today|yesterday|"
              r"recently|finally|lol|tbh)\b.*|\s*[,(!.].*)?)$")
_HOME = r"(?:house|home|place|condo|apartment|apartmnt|flat|townhouse|townhome|bungalow|studio)"
_DEVICE = {
    "phone": (r"iphone(?:\s+\d{1,2}e?)?(?:\s+(?:pro|max|plus|mini|se))*|"
              r"pixel(?:\s+\d{1,2}a?)?(?:\s+(?:pro|xl|fold))*|(?:samsung\s+)?galaxy(?:\s+"
              r"(?:s|a|z|note)\s?\d{1,2}\w*)?(?:\s+(?:ultra|plus|fold\s*\d?|flip\s*\d?))*|"
              r"oneplus(?:\s+\d{1,2}\w*)?|moto\s+\w+|nothing\s+phone(?:\s+\d)?|android\s+phone"),
    "laptop": (r"macbook(?:\s+(?:air|pro))?(?:\s+m\d)?|thinkpad(?:\s+[a-z]?\d+\w*)?|"
               r"xps(?:\s+\d+)?|surface\s+(?:laptop|pro|book)(?:\s+\d+)?|chromebook|zenbook|"
               r"framework\s+laptop|dell\s+(?:xps|latitude|inspiron)(?:\s+\d+)?|"
               r"(?:hp\s+)?(?:spectre|envy)(?:\s+x360)?"),
    # A model that is also a word or a city ("Accord", "Soul", "Tucson") only with its make.
    "car": (r"tesla(?:\s+model\s+[3sxy])?|model\s+[3sxy](?-i:s?)|(?:honda\s+)?(?:civic|cr-v)|"
            r"honda\s+(?:accord|odyssey|pilot|fit)|(?:toyota\s+)?(?:corolla|camry|prius|rav4|"
            r"rav-4|highlander|tacoma|tundra|sienna|4runner)|(?:subaru\s+)?(?:outback|forester|"
            r"crosstrek|impreza)|(?:mazda\s+)?(?:cx-\d+|mx-5|miata)|mazda\s?\d|"
            r"(?:ford\s+)?(?:f-?150|mustang|bronco)|ford\s+(?:maverick|escape|explorer|focus)|"
            r"(?:jeep\s+)?(?:wrangler|grand\s+cherokee)|(?:vw\s+|volkswagen\s+)?(?:jetta|passat|"
            r"tiguan|id\.?4)|(?:chevy\s+|chevrolet\s+)?(?:silverado|tahoe)|"
            r"(?:chevy|chevrolet)\s+(?:bolt|equinox|malibu)|(?:hyundai\s+)?(?:elantra|ioniq\s?\d?)|"
            r"hyundai\s+(?:tucson|santa\s+fe|sonata|kona)|(?:kia\s+)?(?:sorento|telluride|"
            r"sportage|ev6)|kia\s+soul|(?:nissan\s+)?(?:altima|sentra)|nissan\s+(?:leaf|rogue)|"
            r"rivian(?:\s+r1[st])?|(?:volvo|bmw|audi|lexus|subaru|mazda|honda|toyota|hyundai|kia|"
            r"jeep|mercedes|porsche)(?:\s+[a-z]*\d+\w*)?"),
}
_OWNED = r"(?:(?:new|used|refurbished|secondhand|second-hand|brand\s+new)\s+)?(?:'?\d{2,4}\s+)?"


def _device(kind: str) -> str:
    return rf"(?P<v>{_DEVICE[kind]})\b"


# Someone else named just before the verb: "my sister drove home in the Prius".
_OTHER_DRIVER = re.compile(r"(?:\b(?:he|she|they)|\b(?:my|our)\s+\w+|(?-i:\b(?!I\b)[A-Z][a-z]\w*))"
                           r"\s+(?:\w+\s+)?$", re.I)


def _speakers(handler: Handler) -> Handler:
    def handle(m: re.Match[str], clause: str) -> Found | str | None:
        if _OTHER_DRIVER.search(m["before"] or ""):
            return None
        return handler(m, clause)

    return handle


def _devices() -> list[tuple[re.Pattern[str], Handler]]:
    out = []
    for kind in _DEVICE:
        # "my new phone is a Pixel 8", "Dana's car is a Prius": any name of its kind
        out.append((rx(r"^(?:(?P<me>my|our)|(?P<who>(?:my|our)\s+", _KIN_MOD, rf"(?P<rel>{_KIN})",
                       rf"(?:\s+(?P<named>{_NAME_WORD}))?|(?P<bare>{_NAME_WORD}))'s)\s+",
                       rf"(?:new\s+|current\s+)?{kind}\s+(?:is|'s)\s+(?:now\s+)?(?:a|an|the)\s+",
                       _OWNED, r"(?P<v>[\w.+-]+(?:\s+[\w.+-]+){0,3}?)",
                       r"(?P<rest>(?:\s+(?:now|and|but|so|which)\b.*|\s*[,(!].*)?)$"),
                    attribute(kind, _model)))
    # "he's android and I'm iphone", "I'm an iPhone person": a phone by its platform
    out.append((rx(_LEAD, _BE, r"(?:(?:a|an)\s+)?(?P<v>android|iphone|apple|samsung|pixel)",
                   r"(?:\s+(?:person|user|guy|girl|fan|household))?\b", _REST),
                attribute("phone", _model, plain=False, confidence=0.75)))
    for kind in _DEVICE:
        v = _device(kind)
        out += [
            # "grabbed an iPhone 16", "we got a used Model 3", "Omar caved and got a Pixel 9"
            (rx(_LEAD, r"\s+(?:\w+\s+)?(?:and\s+)?(?:just\s+|finally\s+)?(?:got|grabbed|bought|",
                r"picked\s+up|ordered|upgraded\s+to|switched\s+to|traded\s+up\s+to|",
                r"ended\s+up\s+with|went\s+with|leased)\s+(?:a|an|the|my|our|myself\s+a)\s+",
                _OWNED, v, _REST), attribute(kind, _model, change=True, plain=False)),
            # "grabbed a Pixel 9 yesterday": the speaker left out "I"
            (rx(r"^(?P<dropped>)(?:just\s+|finally\s+|also\s+)?(?:got|grabbed|bought|picked\s+up|",
                r"ordered|upgraded\s+to|leased)\s+(?:a|an|the|myself\s+a)\s+", _OWNED, v, _REST),
             attribute(kind, _model, change=True, plain=False)),
            # "did the trade-in and drove home in the Tesla", "traded the Civic in for a
            # Model 3": the speaker's, however the clause opens
            (rx(r"^(?P<dropped>)(?P<before>.*?)\b(?:drove|driven|driving)\s+(?:it\s+)?home\s+",
                r"in\s+(?:a|an|the|my|our)\s+", _OWNED, v, _REST),
             _speakers(attribute(kind, _model, change=True, plain=False))),
            (rx(_LEAD, r"\s+", _ADV, r"traded\s+(?:in\s+)?(?:\w+\s+){1,3}?(?:in\s+)?for\s+",
                r"(?:a|an|the)\s+", _OWNED, v, _REST),
             attribute(kind, _model, change=True, plain=False)),
            # "I have a MacBook Air", "Dana drives a Prius", "I'm on an iPhone"
            (rx(_LEAD, r"\s+(?:have|has|own|owns|drive|drives|use|uses|(?:am|is|are)\s+on)\s+",
                r"(?:a|an)\s+", _OWNED, v, _REST), attribute(kind, _model, plain=False)),
            # "I'm borrowing my wife's Prius all week": the wife's, wherever it is said
            (rx(r"^.*?\b(?P<who>(?:my|our)\s+", _KIN_MOD, rf"(?P<rel>{_KIN})(?:\s+(?P<named>",
                _NAME_WORD, r"))?)'s\s+(?:new\s+)?", v, r"(?P<rest>.*)$"),
             attribute(kind, _model, plain=False, confidence=0.75)),
            # "my thinkpad's fan is loud", "my Outback needs new tires", "my wife's Prius"
            (rx(r"^(?:(?:so|and|but|also|plus|oh|btw|ok|okay)[\s,:]+)?",
                rf"(?:(?P<who>(?:my|our)\s+{_KIN_MOD}(?P<rel>{_KIN})(?:\s+(?P<named>",
                _NAME_WORD, r"))?)'s\s+|(?P<me>my|our)\s+)(?:new\s+)?", v, r"(?!\s+(?:was|were))",
                r"(?P<rest>.*)$"),
             attribute(kind, _model, plain=False, confidence=0.75)),
        ]
    return out


# How someone moved, between "moved" and "to": "moved back to", "moved across the bay to",
# "moved the whole family out to". Anything else is what was moved ("we moved Amara to a new
# school", "moved my dentist appointment to May"), not where someone lives now.
_MOVED_HOW = (r"(?:(?:back|out|over|down|up|across|away|all|the|way|here|there|finally|just|"
              r"recently|permanently|eventually|again|our|my|whole|family|kids|us|everyone|"
              r"cross-country|country|bay|city|town|street|road|block|river|pond|border|world|"
              r"state|coast|north|south|east|west|upstate|"
              r"overseas|abroad|home)\s+){0,4}?")


def _owned_in_question(kind: str) -> re.Pattern[str]:
    given = (rf"(?=(?:{_DEVICE[kind]})\s+(?:(?:that|which)\s+)?(?:[\w-]+\s+){{1,2}}?"
             r"(?:gave|got|bought|lent|handed|issued)\s+me\b)")
    return re.compile(rf"\b(?:(?:my|our)\s+(?:new\s+|current\s+)?|the\s+(?:new\s+)?{given})"
                      rf"{_device(kind)}", re.I)


_OWNED_IN_QUESTION = {kind: _owned_in_question(kind) for kind in _DEVICE}


def owned_in_question(question: str) -> list[Found]:
    """The devices a question takes for granted the user has: "how do I turn off the widget
    on my Pixel 7?", "on the MacBook Air work gave me, where's tap to click?". The question
    is not stored; what it presupposes is, in the words a question about it uses."""
    out = []
    for kind, pattern in _OWNED_IN_QUESTION.items():
        m = pattern.search(question)
        got = _model(m) if m else None
        if got is not None:
            value, shown = got
            out.append(Found(state_of(USER, kind, shown), "fact", attribute_key(None, kind),
                             value, 0.75))
    return out


PATTERNS: list[tuple[re.Pattern[str], Handler]] = [
    # where someone lives
    (rx(_LEAD, rf"\s+{_ADV}(?:lives?|resides?)\s+(?:out\s+|over\s+|down\s+|up\s+)?",
        r"(?:with\s+(?:\w+\s+){1,3}?)?in\s+",
        _PLACE, _REST), attribute("location", _text())),
    (rx(_LEAD, _BE, r"(?:living|based|located|settled)\s+(?:out\s+|over\s+)?",
        r"(?:with\s+(?:\w+\s+){1,3}?)?in\s+", _PLACE,
        _REST), attribute("location", _text())),
    (rx(_LEAD, _BE, r"(?:in|out\s+in)\s+", _PLACE, r"(?P<rest>(?:\s*,.*|\s+(?:now|these\s+days|",
        r"since\s+.+))?)$"), attribute("location", _text(), plain=False, confidence=0.75,
                                       visit=True, also=_more_places)),
    (rx(_LEAD, _BE, r"(?:a|an)\s+", _PLACE, r"\s+(?:resident|local)\b", _REST),
     attribute("location", _text(), change=True, plain=False)),
    (rx(_LEAD, r"\s+(?:\w+\s+)?(?:has\s+|have\s+)?", _ADV,
        r"(?:moved|relocated)\s+", _MOVED_HOW, r"to\s+",
        _PLACE, _REST), attribute("location", _text(), change=True)),
    (rx(_LEAD, r"\s+(?:\w+\s+)?", _ADV, r"(?:closed\s+on|bought|purchased|moved\s+(?:in)?to|",
        r"signed\s+(?:a|the)\s+lease\s+(?:on|for))\s+(?:a|an|the|our|my|his|her|their)\s+",
        r"(?!(?:first|old|previous|former|last|childhood)\b)(?:\w+\s+){0,2}?", _HOME,
        r"\s+(?:in|out\s+in)\s+", _PLACE, _REST),
     attribute("location", _text(), change=True, plain=False)),
    (rx(_LEAD, r"\s+(?:\w+\s+)?", _ADV, r"moved\s+(?:back\s+)?in\s+with\s+(?:\w+\s+){1,4}?in\s+",
        _PLACE, _REST), attribute("location", _text(), change=True, plain=False)),
    (rx(_LEAD, r"\s+(?:\w+\s+)?", _ADV, r"signed\s+(?:a|the)\s+lease\s+in\s+", _PLACE, _REST),
     attribute("location", _text(), change=True, plain=False)),
    (rx(_LEAD, _BE, r"(?:renting|subletting|subleting|leasing)\s+(?:a|an)\s+(?:\w+\s+){0,2}?",
        _HOME, r"\s+in\s+", _PLACE, _REST), attribute("location", _text(), change=True,
                                                       plain=False)),
    # "my friend Hiro (lives in Yokohama) is meeting us"
    (rx(_LEAD, r"\s*\((?:who\s+|he\s+|she\s+|they\s+)?(?:lives|is|'s)\s+(?:based\s+)?in\s+",
        _PLACE, r"\)(?P<rest>.*)$"), attribute("location", _text(), plain=False)),
    # "our place in Denver gets no sun", "grandma's room at Lou's place in Reno is all set
    # up": where someone lives, said in passing -- their home, or their room in another's
    (rx(r"^(?:(?P<who>(?:my|our)\s+", _KIN_MOD, rf"(?P<rel>{_KIN})(?:\s+(?P<named>",
        _NAME_WORD, r"))?|(?P<bare>", _NAME_WORD, r")|(?P<kinword>", _KIN_NAMES, r"))'s|",
        r"(?P<me>my|our))\s+(?!(?:first|old|previous|former|last|childhood)\b)(?:\w+\s+)?",
        r"(?:place|apartment|flat|house|condo|home|townhouse|room|bedroom)\s+",
        r"(?:(?:at|in)\s+(?:\w+\s+){0,2}?[\w-]+'s\s+(?:\w+\s+)?", _HOME, r"\s+)?",
        r"in\s+", _PLACE, r"(?P<rest>\s+(?:is|has|gets|needs|was|does|feels|looks)\b.*)$"),
     attribute("location", _text(), plain=False, confidence=0.75)),

    # where someone works
    (rx(_LEAD, r"\s+", _ADV, r"works?\s+(?:\w+\s+){0,2}?(?:at|for)\s+", _WORKPLACE, _REST),
     attribute("employer", _text(words=4))),
    (rx(_LEAD, _BE, r"(?:working|employed)\s+(?:\w+\s+)?(?:at|for|by)\s+", _ORG, _REST),
     attribute("employer", _text(words=4))),
    (rx(_LEAD, _BE, r"(?:still|now)\s+at\s+", _ORG, _REST),
     attribute("employer", _text(words=4), plain=False)),
    (rx(_LEAD, r"\s+", _ADV, r"(?:started|began)\s+(?:(?:a\s+new\s+job|a\s+job|work|working|",
        r"(?:a\s+|the\s+)?new\s+(?:role|position|gig))\s+)?at\s+", _ORG, _REST),
     attribute("employer", _text(words=4), change=True, plain=False)),
    (rx(_LEAD, r"\s+", _ADV, r"(?:joined|has\s+joined|have\s+joined)\s+", _ORG,
        r"(?P<rest>(?:\s+(?:as|in|on|last|this|back|after|since|full[- ]time)\b.*|\s*[,(].*)?)$"),
     attribute("employer", _text(words=4), change=True, plain=False)),
    (rx(_LEAD, r"\s+", _ADV, r"(?:got|landed|accepted|took|started)\s+(?:a|an|the)\s+(?:new\s+)?",
        r"(?:(?P<role>[\w -]+?)\s+)?(?:job|position|role|offer|gig)\s+(?:at|with|from)\s+", _ORG,
        _REST), attribute("employer", _text(words=4), change=True, plain=False, also=_role_too)),
    (rx(_LEAD, r"\s+", _ADV, r"(?:was|got|has\s+been|have\s+been)\s+hired\s+(?:at|by)\s+", _ORG,
        _REST), attribute("employer", _text(words=4), change=True, plain=False)),
    (rx(_LEAD, _BE, r"at\s+", _ORG, r"(?P<rest>\s+(?:now|these\s+days)\b.*)$"),
     _school_or_work()),
    # "Figma is where I work (now)"
    (rx(r"^", _ORG, r"\s+is\s+where\s+", _WHO, r"\s+(?:works?|(?:am|is|are)\s+working)\b",
        r"(?P<rest>.*)$"), attribute("employer", _text(words=4))),
    # "Hannah survived her first week as vice principal at Westbrook", "Leo's first day at
    # Hillcrest Middle"
    (rx(_LEAD, r"(?:\s+(?:\w+\s+){0,2}?(?:her|his|my|their|our)\s+|'s\s+)first\s+",
        r"(?:week|day|month|shift|semester|term)",
        r"(?:\s+as\s+(?:a\s+|an\s+|the\s+)?(?P<role>[\w -]+?))?\s+at\s+", _ORG, _REST),
     _school_or_work(also=_role_too)),
    (rx(r"^(?P<me>my|our)\s+(?:new\s+)?(?:badge|badge\s+photo|work\s+badge|desk|team|onboarding)",
        r"\s+at\s+", _ORG, _REST), attribute("employer", _text(words=4), plain=False,
                                             confidence=0.75)),

    # what someone does
    (rx(_LEAD, r"\s+", _ADV, r"works?\s+(?:\w+\s+){0,2}?as\s+(?:(?:a|an|the)\s+)?(?P<v>.+)$"),
     attribute("occupation", _role)),
    (rx(_LEAD, _HAS, r"been\s+(?:a|an)\s+(?P<v>.+?)(?:\s+for\s+.+)?$"),
     attribute("occupation", _known_role)),
    (rx(_LEAD, r"\s+(?:\w+\s+)?(?:(?:got|was|were|has\s+been|have\s+been|just\s+got)\s+)?",
        r"(?:promoted|bumped\s+up|moved\s+up|upgraded|made)\s+to\s+(?:a\s+|an\s+|the\s+)?",
        r"(?P<v>[\w -]+?)", _ORG_AT, _ROLE_REST),
     attribute("occupation", _role, change=True, plain=False, also=_employer_after)),
    (rx(_LEAD, r"\s+", _ADV, r"(?:became|has\s+become|is\s+now|'s\s+now)\s+(?:a\s+|an\s+|the\s+)?",
        r"(?P<v>.+)$"), attribute("occupation", _known_role, change=True, plain=False)),
    (rx(_LEAD, _BE, r"(?:a|an)\s+(?P<v>.+)$"), _role_and_home),
    (rx(_LEAD, _BE, r"working\s+as\s+(?:(?:a|an|the)\s+)?(?P<v>.+)$"),
     attribute("occupation", _role)),
    (rx(_LEAD, r"\s+", _ADV, r"(?:got|landed|took|started)\s+(?:a\s+(?:new\s+)?job\s+as|",
        r"(?:a\s+)?(?:new\s+)?(?:role|position|job)\s+as|(?:working\s+)?as)\s+",
        r"(?:(?:a|an|the)\s+)?(?P<v>[\w -]+?)", _ORG_AT, _ROLE_REST),
     attribute("occupation", _role, change=True, plain=False, also=_employer_after)),
    # a job about to begin, said by when it begins: "starting monday as a receptionist at a
    # dental clinic", "I start next week as a barista", "she begins in May as head nurse"
    (rx(r"^(?:(?P<dropped>)|", _LEAD[1:], r"\s+(?:am\s+|is\s+|are\s+|will\s+)?)", _ADV,
        r"(?:start|starts|starting|begin|begins|beginning)\s+",
        r"(?:(?:on\s+|this\s+|next\s+|in\s+)?(?:\w+\s+){1,2}?)?as\s+(?:(?:a|an|the)\s+)?",
        r"(?P<v>[\w -]+?)", _ORG_AT, _ROLE_REST),
     _said_by_me(attribute("occupation", _known_role, change=True, plain=False,
                           also=_employer_after))),
    # a role reached through its training or credential: "Tom graduated from his PA
    # program", "she finished nursing school", "passed the bar", "got her RN"
    (rx(_LEAD, r"\s+", _ADV, r"(?:graduated|finished|completed)\s+(?:from\s+)?",
        r"(?:(?:his|her|their|my|our|the)\s+)?(?P<v>[\w'-]+(?:\s+[\w'-]+)?)\s+",
        r"(?:program|programme|school|academy|training|residency|bootcamp|apprenticeship)\b",
        _REST), attribute("occupation", _trained, change=True, plain=False)),
    (rx(_LEAD, r"\s+", _ADV, r"(?:passed|got|earned|received)\s+(?:(?:his|her|their|my|our)\s+",
        r"(?:(?P<v>(?-i:[A-Z]{2,4}))\b|(?P<v2>[\w'-]+(?:\s+[\w'-]+)?)\s+(?:license|licence|",
        r"certification|boards|exam))|the\s+(?P<v3>bar)\b)", _REST),
     attribute("occupation", _credential, change=True, plain=False)),
    # "opening shift in 30 min (barista at Blue Bottle)": the speaker's role, said aside
    # (not "my friend Tom (nurse at Mercy)", who is Tom)
    (rx(r"^(?P<dropped>)(?P<before>[^(]+?\s*)\((?:as\s+)?(?:(?:a|an|the)\s+)?",
        r"(?!(?:my|our|his|her|their)\b)(?P<v>[\w -]+?)",
        _ORG_AT, r"\)(?P<rest>.*)$"),
     _speakers(attribute("occupation", _known_role, plain=False, also=_employer_after))),
    # "the photography business is my full-time thing now": what the user does for work
    (rx(r"^(?P<dropped>)(?:the\s+|my\s+)?(?P<v>[\w -]+?)\s+is\s+(?:now\s+)?(?:officially\s+)?",
        r"my\s+(?:new\s+)?(?:full[- ]time|main|day)\s+(?:thing|job|gig|work|career)\b",
        r"(?P<rest>.*)$"), attribute("occupation", _text(words=4), change=True, plain=False)),
    (rx(_LEAD, r"\s+", _ADV, r"teach(?:es)?\s+(?P<v>.+)$"),
     attribute("occupation", _fixed("teacher"))),
    (rx(_LEAD, rf"(?:{_BE}|\s+{_ADV}(?:(?:has|have)\s+)?)(?:now\s+)?(?P<v>retired)\b", _REST),
     attribute("occupation", _fixed("retired"), change=True)),
    (rx(_LEAD, r"'s\s+retirement\s+(?:party|dinner|celebration|lunch|send-off)\b", _REST),
     attribute("occupation", _fixed("retired"), change=True, plain=False)),

    # where someone studies
    # "Leo goes to Hillcrest Middle", "my son goes to Purdue" -- not "I go to Costco"
    (rx(_LEAD, r"\s+", _ADV, r"(?:goes|go)\s+to\s+", _PLACE,
        r"(?P<rest>(?:\s+(?:now|these\s+days|and|but|so|which|where)\b.*|\s*[,(].*)?)$"),
     attribute("school", _school)),
    (rx(_LEAD, r"\s+", _ADV, r"(?:attends|attend|is\s+attending|am\s+attending|(?:is|am|are)\s+",
        r"enrolled\s+(?:at|in))\s+", _PLACE, _REST), attribute("school", _text())),
    (rx(_LEAD, _BE, r"(?:at|in)\s+(?P<v>(?-i:[A-Z])[\w.'-]*(?:\s+(?-i:[A-Z])[\w.'-]*){0,3}\s+",
        _SCHOOL_WORD, r")\b", _REST), attribute("school", _text(), plain=False)),
    (rx(_LEAD, r"(?:\s+|'s\s+)", _ADV, r"(?:started|starts|began|begins|is\s+starting|starting|",
        r"moved\s+up\s+to)\s+",
        r"(?:(?:kindergarten|preschool|pre-k|daycare|school|college|uni|grad\s+school|",
        r"(?:\w+\s+)?grade|(?:high|middle|elementary)\s+school|(?:his|her|their|my)\s+\w+\s+",
        r"year|(?:freshman|sophomore|junior|senior|first|second|third|final)\s+year)\s+)?",
        r"at\s+(?P<v>(?-i:[A-Z])[\w.'-]*(?:\s+(?-i:[A-Z])[\w.'-]*){0,3})", _REST),
     attribute("school", _text(), change=True, plain=False)),
    (rx(_LEAD, r"\s+", _ADV, r"(?:(?:has|have)\s+)?(?:transferred|switched\s+schools|moved\s+",
        r"schools)\s+to\s+(?P<v>(?-i:[A-Z])[\w.'-]*(?:\s+(?-i:[A-Z])[\w.'-]*){0,3})", _REST),
     attribute("school", _text(), change=True, plain=False)),
    # what someone studies: "I'm a bio major at ACC", "switched my major to CS"
    (rx(_LEAD, _BE, r"(?:a|an)\s+(?P<v>[\w -]+?)\s+major\b(?:\s+at\s+(?P<org>(?-i:[A-Z])[\w.'-]*",
        r"(?:\s+(?-i:[A-Z])[\w.'-]*){0,3}))?", _REST),
     attribute("major", _text(words=4), plain=False, also=_school_after)),
    (rx(_LEAD, r"\s+", _ADV, r"(?:switched|changed)\s+(?:my|his|her|their|our)\s+major\s+",
        r"(?:from\s+[\w -]+?\s+)?to\s+(?P<v>[\w -]+?)", _ROLE_REST),
     attribute("major", _text(words=4), change=True, plain=False)),
    (rx(_LEAD, _BE, r"majoring\s+in\s+(?P<v>[\w -]+?)", _ROLE_REST),
     attribute("major", _text(words=4), plain=False)),
    (rx(_LEAD, _BE, r"(?:in\s+)?(?:(?:a|an|the)\s+)?(?:\w+\s+)?",
        r"(?:grade(?:r)?|year|freshman|sophomore|",
        r"junior|senior|student|grad\s+student|phd\s+student|undergrad|first-year|",
        r"(?:\w+\s+)?major)\s+at\s+", _PLACE, _REST),
     attribute("school", _text(), plain=False)),
    (rx(_LEAD, r"'s\s+(?:class|classroom|teacher|school|grade)\s+at\s+", _PLACE, _REST),
     attribute("school", _text(), plain=False, confidence=0.75)),

    # how many people the speaker works with: "my team is 6 people now", "I'm on a team of 4",
    # "I lead a team of five", "our team grew to 9" -- one number, a later one replaces it
    (rx(r"^(?:(?:so|and|but|also|plus|oh|btw|ok|okay)[\s,:]+)?(?:my|our)\s+team(?:\s+is|'s|",
        r"\s+(?:has\s+)?(?:grown|grew|shrunk|shrank|went|gone|doubled|is\s+up|is\s+down)",
        r")\s+", _ADV, r"(?:(?:up|down)\s+)?(?:to\s+)?(?P<n>", NUMBER, r")", _TEAM_UNIT, _TEAM_REST),
     _team_size),
    (rx(r"^(?:(?:so|and|but|also|plus|oh|btw|ok|okay)[\s,:]+)?(?:(?P<dropped>)|(?:i|we)\s+(?:am\s+|are\s+)?)",
        _ADV, r"(?:on|in|part\s+of|lead|leads|manage|run|head|joined)\s+(?:a|the)\s+",
        r"(?:\w+\s+)?team\s+of\s+(?P<n>", NUMBER, r")", _TEAM_UNIT, _TEAM_REST),
     _said_by_me(_team_size)),

    # how old someone is
    (rx(_LEAD, _BE, r"(?P<n>", NUMBER, r")(?:\s+years?\s+old|\s*y/?o|\s+yrs?\s+old)?",
        r"(?:\s+(?:now|today|already))?(?P<rest>(?:\s*(?:,|\(|and\b|&|but\b|so\b|now\b|!).*)?)$"),
     _age_and_home),
    (rx(_LEAD, r"\s+", _ADV, r"turned\s+(?P<n>", NUMBER, r")\b", _REST),
     attribute("age", _age, change=True)),
    (rx(_LEAD, r"\s+(?:\w+\s+)?(?:blew\s+out|had|got)\s+(?P<n>", NUMBER, r")\s+",
        r"(?:birthday\s+)?candles\b", _REST), attribute("age", _age, change=True, plain=False)),
    (rx(_LEAD, r"\s+(?:\w+\s+)?(?:had|celebrated|turned)\s+(?:his|her|their|my|our)\s+",
        r"(?P<n>\d{1,3})(?:st|nd|rd|th)\s+birthday\b", _REST),
     attribute("age", _age, change=True, plain=False)),
    # "it was Leo's 11th birthday yesterday", "Leo's 11th birthday party is saturday"
    (rx(r"^(?:.*?\s)?", _SOMEONE, r"'s\s+(?P<n>\d{1,3})",
        r"(?:st|nd|rd|th)\s+birthday\b", _REST),
     attribute("age", _age, change=True, plain=False)),
    (rx(r"^(?:my|our)\s+(?P<n>", NUMBER, r")[\s-]*(?:years?|yrs?|y/?o)(?:[\s-]+old)?\s+",
        rf"(?P<who>{_KIN_MOD}(?P<rel>{_KIN})?\s*(?P<named>{_NAME_WORD})?)(?P<rest>\s.*)$"),
     attribute("age", _age, plain=False)),
    (rx(r"^(?P<who>(?P<bare>", _NAME_WORD, r"))\s*\((?P<n>", NUMBER,
        r")\s*(?:y/?o|years?\s+old|yrs?)?\b[^)]*\)(?P<rest>.*)$"),
     attribute("age", _age, plain=False)),

    # expecting a baby, and its birth, which ends that: "Kim is pregnant with her first",
    # "Kim had the baby", "Kim's little one showed up two weeks early"
    (rx(_LEAD, _BE, r"(?:\w+\s+)?(?:pregnant|expecting(?=\s+(?:a|her|his|their|our|my)\s+",
        r"(?:baby|first|second|third|child|kid|twins|little)\b))", _REST),
     attribute("pregnancy", _fixed("pregnant"))),
    (rx(_LEAD, _WITH_PARTNER, r"\s+", _ADV, r"(?:(?:had|delivered|welcomed)\s+",
        r"(?:(?:the|a|her|his|their|our|my)\s+(?:(?:new|little|baby|healthy|beautiful|tiny)\s+)*",
        r"(?:baby|babies|twins|boy|girl|son|daughter|little\s+one)|twins|triplets)|",
        r"gave\s+birth)\b", _REST),
     attribute("pregnancy", _fixed("had the baby"), change=True, also=_baby_named)),
    (rx(_LEAD, r"'s\s+(?:new\s+)?(?:baby(?:\s+(?:boy|girl))?|little\s+(?:guy|girl|boy|one|man|",
        r"lady|dude)|newborn|twins)\s+(?:\w+\s+)?(?:showed\s+up|arrived|came|is\s+here|are\s+",
        r"here|was\s+born|were\s+born|made\s+(?:his|her|their)\s+(?:arrival|debut))\b", _REST),
     attribute("pregnancy", _fixed("had the baby"), change=True, plain=False,
               also=_baby_named)),
    # engaged, married, divorced
    (rx(_LEAD, rf"(?:\s*(?:&|and)\s+{_NAME_WORD})?",
        r"\s+(?:\w+\s+)?(?:got|is|are|am|'s|just\s+got|finally\s+got|has\s+gotten|",
        r"recently\s+got|officially\s+got)\s+(?:officially\s+)?",
        r"(?P<v>engaged|married|divorced|separated|hitched)\b", _REST),
     attribute("relationship_status", _text(), change=True)),
    (rx(_LEAD, rf"'s\s+{_ADV}(?P<v>engaged|married|divorced|separated)\b", _REST),
     attribute("relationship_status", _text(), change=True)),
    (rx(r"^(?:i\s+|we\s+)?(?:am\s+|are\s+)?(?:just\s+|finally\s+)?(?:back\s+from|got\s+back\s+",
        r"from|went\s+to|attended|came\s+back\s+from|flew\s+home\s+from)\s+",
        rf"(?P<who>(?:my|our)\s+{_KIN_MOD}(?P<rel>{_KIN})(?:\s+(?P<named>{_NAME_WORD}))?",
        rf"|(?P<bare>{_NAME_WORD}))(?:\s*(?:&|and)\s+{_NAME_WORD})?'s\s+wedding\b", _REST),
     attribute("relationship_status", _fixed("married"), change=True, plain=False)),
]

# "my new job is at Stripe", "Dana's new place is in Boise", "my son's school is Hillcrest
# Middle": an attribute named by its noun, the user's or someone's.
_NOUN_ATTRIBUTE = {
    "job": "occupation", "title": "occupation", "role": "occupation", "position": "occupation",
    "work": "employer", "office": "employer", "workplace": "employer", "employer": "employer",
    "company": "employer", "school": "school", "college": "school", "university": "school",
    "place": "location", "apartment": "location", "house": "location", "home": "location",
    "city": "location", "town": "location", "major": "major",
}
_POSSESSOR = (rf"^(?:(?:so|and|but|also|ok|okay)[\s,:]+)?(?:(?P<me>my|our)|(?P<who>(?:my|our)\s+"
              rf"{_KIN_MOD}(?P<rel>{_KIN})(?:\s+(?P<named>{_NAME_WORD}))?|(?P<bare>"
              rf"(?-i:[A-Z][a-z][\w-]*)))'s)\s+")


def _by_noun(m: re.Match[str], clause: str) -> Found | str | None:
    noun = m["noun"].lower()
    name = _NOUN_ATTRIBUTE[noun]
    prep = (m["prep"] or "").lower()
    if name == "occupation" and prep in ("at", "with", "for"):
        name = "employer"  # "my new job is at Stripe"
    if name == "location" and noun in ("place", "apartment", "house", "home") and prep != "in":
        return None  # "my place is a mess"
    if name == "employer" and noun in ("work", "office") and prep not in ("at", "with", "for"):
        return None  # "work is crazy"
    read = _known_role if name == "occupation" else _text(words=4)  # not "my job is killing me"
    return attribute(name, read, change=bool(m["new"]))(m, clause)


# The user's manager and partner, told by name: "my manager is Tom", "Priya is my manager
# now", "my manager Derek wants ...", "Karen (my manager) ...", "I report to Luis".
_HOLDER = {"manager": "manager", "boss": "manager", "supervisor": "manager", "team lead": "manager",
           "line manager": "manager", "wife": "partner", "husband": "partner",
           "partner": "partner", "girlfriend": "partner", "boyfriend": "partner",
           "fiance": "partner", "fiancee": "partner", "fiancé": "partner", "fiancée": "partner",
           "spouse": "partner", "gf": "partner", "bf": "partner"}
_HOLDER_WORD = (r"(?P<role>line\s+manager|team\s+lead|manager|boss|supervisor|wife|husband|"
                r"partner|girlfriend|boyfriend|fianc[eé]e?|spouse)")


def _holder(change: bool = False, plain: bool = True, named: bool = False) -> Handler:
    def handle(m: re.Match[str], clause: str) -> Found | None:
        name = m["name"]
        if name.lower() in _NOT_NAMES or name.lower() in _CAPITAL_KIN:
            return None
        word = re.sub(r"\s+", " ", m["role"].lower())
        role = _HOLDER[word]
        me = Subject(None, "The user")
        value = normalize_value(name)
        if named:  # only "my wife Carmen": who she is, said as a statement
            return Found(f"The user's {word} is {name}", "fact", attribute_key(None, role),
                         value, 0.8)
        if plain:
            return Found(content_of(me, role, name, clause, True), "fact",
                         attribute_key(None, role), value, 0.8, change=change)
        # "my wife Hannah teaches third grade": Hannah's job, and who Hannah is to the user.
        said = Found(f"The user's {word} is {name}", "fact", attribute_key(None, role), value,
                     0.8)
        if role == "manager" and _GONE.match(clause[m.end("name"):]):
            # "my manager Priya left for Google": Priya is no longer the user's manager; the
            # key with no value retires only the holder that names her. (A partner who "left
            # for a conference" is still one.)
            return Found(third_person(clause), "fact", attribute_key(None, role), None, 0.8,
                         change=True)
        if REPORTED.search(clause) or _THEIR_VIEW.search(clause):
            # "my manager Tom said I should learn Go": who Tom is, not what he said.
            return said
        for pattern, handler in PATTERNS:
            hit = pattern.match(clause)
            found = handler(hit, clause) if hit is not None else None
            if isinstance(found, Found):
                found.also.append(said)
                return found
        return Found(third_person(clause), "fact", attribute_key(None, role), value, 0.8)

    return handle


# A manager leaving the role: "left (for Google)", "quit", "moved on", "was let go".
_GONE = re.compile(r"\s*,?\s+(?:(?:just|finally|officially|actually)\s+)?(?:left|quit|resigned|"
                   r"retired|moved\s+on|stepped\s+down|(?:was|got)\s+(?:let\s+go|fired|"
                   r"laid\s+off|promoted\s+out))\b", re.I)


# Someone's taste or opinion is theirs, not a fact to key under them. (What a manager wants
# done is kept: it goes with that manager.)
_THEIR_VIEW = re.compile(r"\b(?:prefers?|likes?|loves?|hates?|thinks?|believes?|feels?|says?|"
                        r"recommends?|suggests?|swears\s+by)\b", re.I)


def _report_to(m: re.Match[str], clause: str) -> Found | None:
    """"I report to Luis", and "Luis came over from Dublin and I've been reporting to him":
    "him" or "her" is the person the clause opened with (one that opens with "he" is read
    again with the person in its place, ``extract._about_someone``)."""
    name = m["name"] or _subject_name(m["before"] or "")
    if name is None or name.lower() in _NOT_NAMES:
        return None
    me = Subject(None, "The user")
    return Found(content_of(me, "manager", name, clause, False), "fact",
                 attribute_key(None, "manager"), normalize_value(name), 0.8, change=True)


def _subject_name(text: str) -> str | None:
    opening = re.match(_NAME_WORD, text)
    return opening[0] if opening else None


# Someone new brought in by name: "my new manager is some guy called Tobias".
_INTRODUCED = (r"(?:(?:some|a|this|one)\s+(?:guy|girl|man|woman|lady|dude|gal|bloke|chap|person|"
               r"fellow)\s+(?:called|named)\s+)?")
# A remark the speaker adds on them: "..., seems chill so far".
_REMARK = r"(?:\s*,\s*(?:seems|sounds|looks|and\s+(?:he|she|they)\s+(?:seems?|sounds?))\b.*)?"


HOLDERS: list[tuple[re.Pattern[str], Handler]] = [
    (rx(r"^(?:my|our)\s+(?:new\s+)?", _HOLDER_WORD, r"\s+is\s+(?:now\s+)?", _INTRODUCED,
        r"(?P<name>", _NAME_WORD, r")(?:\s+now)?", _REMARK, r"$"), _holder()),
    (rx(r"^(?P<name>", _NAME_WORD, r")(?:\s+is|'s)\s+(?:now\s+)?(?:officially\s+)?(?:my|our)\s+",
        r"(?:new\s+)?", _HOLDER_WORD, r"(?:\s+now)?(?:\s*,.*|\s+(?:since|as\s+of)\s+.*)?$"),
     _holder(change=True)),
    (rx(r"^(?:my|our)\s+(?:new\s+)?", _HOLDER_WORD, r"\s*,?\s+(?P<name>", _NAME_WORD,
        r")\s*,?\s+(?!is\b|was\b|used\b)\w+.*$"), _holder(plain=False)),
    # The first of two subjects, split off "my wife Carmen and I are ...": who she is.
    (rx(r"^(?:my|our)\s+(?:new\s+)?", _HOLDER_WORD, r"\s*,?\s+(?P<name>", _NAME_WORD,
        r")$"), _holder(named=True)),
    (rx(r"^(?P<name>", _NAME_WORD, r")\s*\((?:my|our)\s+(?:new\s+)?", _HOLDER_WORD,
        r"\)\s*.+$"), _holder(plain=False)),
    (rx(r"^(?:i|we)\s+(?:have|got|have\s+got)\s+a\s+new\s+", _HOLDER_WORD, r"\s*[,:-]?\s+",
        r"(?P<name>", _NAME_WORD, r")\b.*$"), _holder(change=True)),
    (rx(r"^(?P<name>", _NAME_WORD, r")\s+(?:just\s+)?(?:took\s+over|stepped\s+in)\s+as\s+",
        r"(?:my|our)\s+(?:new\s+)?", _HOLDER_WORD, r"\b.*$"), _holder(change=True)),
    (rx(r"^(?:(?P<before>.*?),?\s+(?:and|so|but)\s+)?i\s+(?:now\s+|officially\s+)?",
        r"(?:report|have\s+been\s+reporting|am\s+reporting|started\s+reporting)\s+",
        r"(?:directly\s+)?to\s+(?:(?P<name>", _NAME_WORD, r")|(?-i:him|her))\b(?:\s+.*)?$"),
     _report_to),
]

BY_NOUN: list[tuple[re.Pattern[str], Handler]] = [
    (rx(_POSSESSOR, r"(?P<new>new\s+|current\s+)?(?P<noun>",
        "|".join(sorted(_NOUN_ATTRIBUTE, key=len, reverse=True)), r")\s+(?:is|'s)\s+",
        r"(?:now\s+|officially\s+)?(?:(?P<prep>at|with|for|in)\s+)?(?:(?:a|an)\s+)?",
        r"(?P<v>(?:the\s+)?[\w&.'-]+(?:\s+[\w&.'-]+){0,3}?)",
        r"(?P<rest>(?:\s+(?:now|and|but|so|which|since|as\s+of)\b.*|\s*[,(!].*)?)$"),
     _by_noun),
]

class _Gate:
    """Matches a clause holding one of its words (a word set, not a regex: a pass over a
    clause's words costs less than one of the patterns behind it)."""

    def __init__(self, words: frozenset[str], starts: tuple[str, ...] = ("'s",)) -> None:
        self.words = words
        self.starts = starts  # word beginnings (a model's family: "cx-", "iphone")

    def match(self, text: str) -> re.Match[str] | None:
        for word in _TOKEN.findall(text.lower()):
            if (word in self.words or word[:1].isdigit() or word.startswith(self.starts)
                    or word.endswith("'s") and word not in _NO_SUBJECT):
                return _WHOLE.match(text)
        return None


# "it's", "that's": a contraction, no person's "is".
_NO_SUBJECT = frozenset("it's that's what's there's here's let's who's where's how's "
                        "when's why's one's".split())


_TOKEN = re.compile(r"[\w'/-]+")
_WHOLE = re.compile(r".*", re.S)


def gated(gate: _Gate, patterns: list[tuple[re.Pattern[str], Handler]]
          ) -> list[tuple[re.Pattern[str], Handler]]:
    """``patterns`` as one family entry tried only on a clause ``gate`` lets through: the
    extractor tries every family on every clause, and most clauses name no attribute."""

    def dispatch(m: re.Match[str], clause: str) -> Found | str | None:
        for pattern, handler in patterns:
            hit = pattern.match(clause)
            found = handler(hit, clause) if hit is not None else None
            if found is not None:
                return found
        return None

    return [(gate, dispatch)]  # type: ignore[list-item]


# What the patterns below need somewhere in the clause: a verb or noun of theirs, a copula
# ("is a nurse", "is 9", "'s in Atlanta": any "is", "am", "are" or "X's"), or a number.
_WORDS = _Gate(frozenset("""
is am are live lives living reside resides based located settled resident local moved moving
relocated closed bought purchased lease leasing renting subletting place apartment flat house
condo home townhouse city town work works working employed started starts starting began begins
joined first badge desk team onboarding job position role offer gig hired where office company
been promoted bumped upgraded made became become teach teaches retired retirement go goes
attend attends attending enrolled school college university class classroom grade transferred
switched changed major majoring title turned candles birthday years year yrs yr yo y/o engaged
married divorced separated hitched wedding pregnant expecting baby birth had delivered
welcomed graduated finished completed passed earned
received manager boss supervisor lead wife husband partner
girlfriend boyfriend fiance fiancee fiancé fiancée spouse report reporting took landed accepted
got now still workplace employer
""".split()))
_DEVICE_WORDS = _Gate(frozenset("""
phone car laptop android apple samsung drove driven driving traded iphone pixel galaxy oneplus
moto macbook thinkpad xps surface chromebook zenbook framework dell hp spectre envy
tesla model civic cr-v honda corolla camry prius rav4 rav-4 highlander tacoma tundra sienna
4runner toyota outback forester crosstrek impreza subaru cx-5 cx-50 cx-30 cx-9 mx-5 miata mazda
mazda3 mazda6 ford f-150 f150 mustang bronco jeep wrangler vw volkswagen jetta passat tiguan
id.4 id4 chevy chevrolet silverado tahoe hyundai elantra ioniq kia sorento telluride sportage
ev6 nissan altima sentra rivian volvo bmw audi lexus mercedes porsche
""".split()), starts=("cx-", "mx-", "mazda", "ioniq", "f-1", "iphone", "pixel", "galaxy",
                      "oneplus", "thinkpad", "macbook", "xps", "id.", "r1"))
ALL: list[tuple[re.Pattern[str], Handler]] = gated(_WORDS, [*HOLDERS, *BY_NOUN, *PATTERNS])

# Tried before the preference changes, which would read "moved from QA to product manager"
# as a move to a place, and "switched to an iPhone" as only a preference.
EARLY: list[tuple[re.Pattern[str], Handler]] = [
    *gated(_DEVICE_WORDS, _devices()),
    (rx(_LEAD, r"\s+", _ADV, r"(?:moved|switched)\s+(?:over\s+)?from\s+[\w -]+?\s+to\s+",
        r"(?:a\s+|an\s+|the\s+)?(?P<v>[\w -]+?)", _ORG_AT, _ROLE_REST),
     attribute("occupation", _known_role, change=True, plain=False, also=_employer_after)),
]
