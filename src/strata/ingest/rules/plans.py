"""Things on the calendar and their lifecycle: "my flight to Tokyo is on April 10", "got a
dentist appointment on Friday at 3pm", "we're moving to Seattle in July", "I'm hosting
Thanksgiving", then "the airline moved my Tokyo flight to April 14", "the move is September
now", "the Tokyo trip got cancelled", "Thanksgiving is at my sister's after all", "I finally
took the GRE".

A plan is an event with a slot ``schedule.<what>``, keyed by the content words of what is
planned in any order ("flight to Tokyo" and "Tokyo flight" are ``schedule.flight_tokyo``;
"dentist appointment" and "the dentist" are ``schedule.dentist``) and valued by its state: its
date, where it is, ``cancelled`` or ``done``. The write path matches plan keys by what they
are about (``strata.write.topics``: "the Tokyo trip" meets "my flight to Tokyo"; "the move"
meets the one move there is), so every later word on a plan supersedes the last. The new
date of a rescheduling is in the future whatever the tense of "moved". A standing slot
("practice is Wednesdays now") is valued by its day of the week, which is no date.

A word that does not name its plan ("it's over!! 328", "I'm licensed", "moved to Monday",
"we rebooked for Portugal") is keyed by its kind only, or by ``schedule.plan`` when it says
no kind: the write path finds the one open plan it is about and puts that plan's name in it.
"""

from __future__ import annotations

import re
from datetime import datetime

from strata.ingest.dates import DateMatch, find_date, find_dates, guess_tense, render
from strata.ingest.rules.base import Result, rx
from strata.ingest.rules.person import third_person
from strata.ingest.rules.text import remove_date, squash
from strata.write import slots, topics

# Words that say what kind of entry a plan is, not which one.
_GENERIC = frozenset(
    "appointment appt reservation booking session meeting plan date time slot thing".split()
)
# What kind of entry on a calendar a plan is: only these are keyed (a plain "I'm meeting Sam
# next week" stays a slotless event: a second meeting is not a rescheduling of the first).
_ENTRY = (r"(?:flight|trip|appointment|appt|reservation|booking|interview|surgery|exam|test|"
          r"class|lesson|concert|party|wedding|visit|vacation|holiday|checkup|check-up|session|"
          r"deadline|launch|move|dinner|call|meeting|game|match|race|marathon|show|date|round|"
          r"dentist|doctor|haircut|vet)")
_PLAN = rx(r"^(?:i|we)\s+(?:have\s+|had\s+)?(?:just\s+)?(?:got|have|booked|scheduled|made|",
           r"set\s+up|planned|arranged|reserved)\s+(?:a|an|my|our|the)\s+",
           r"(?P<what>(?:[\w-]+\s+){0,4}?", _ENTRY, r"(?:\s+[\w-]+){0,3}?)",
           r"(?:\s+(?:on|at|for|in|this|next))?$")
# Holidays a plan may be about ("I'm hosting Thanksgiving", "Christmas is at my mom's").
_HOLIDAY = (r"(?:thanksgiving|christmas|xmas|easter|passover|hanukkah|chanukah|diwali|eid|"
            r"ramadan|new\s+year'?s(?:\s+eve)?|halloween|friendsgiving|lunar\s+new\s+year|"
            r"rosh\s+hashanah|yom\s+kippur|memorial\s+day|labor\s+day|july\s+4th|"
            r"fourth\s+of\s+july)")
_MY_PLAN = rx(r"^(?:my|our|the)\s+(?P<what>(?:[\w-]+\s+){0,4}?", _ENTRY, r"(?:\s+[\w-]+){0,3}?)",
              r"\s+(?:is|was|will\s+be)(?:\s+(?:now|instead|at|in)\b.*)?$")
# "GRE is aug 9", "NSF proposal due oct 3": a named thing and its day (a date in the future).
_NAMED_PLAN = rx(r"^(?:(?:my|our|the)\s+)?(?P<what>(?:[\w-]+\s+){0,2}?[\w-]+)\s+",
                 r"(?:is\s+due|due|is|will\s+be)(?:\s+now)?$")
# "I'm taking the GRE", "we're going to the Lorde concert": what the user will do, by name
_DOING = rx(r"^(?:i|we)\s+(?:am|are|will\s+be)\s+(?:taking|sitting|having|running|attending|",
            r"going\s+to|doing)\s+(?:a|an|my|our|the)\s+(?P<what>(?:[\w'-]+\s+){0,3}?[\w'-]+)$")
# "we're flying to Rome", "I'm heading to Denver": a trip, by where it goes
_TRAVEL = rx(r"^(?:i|we)\s+(?:am|are|will\s+be)\s+(?:flying|going|heading|traveling|travelling|",
             r"driving|taking\s+a\s+trip)\s+(?:back\s+)?to\s+(?P<place>(?-i:[A-Z])[\w-]+",
             r"(?:\s+(?-i:[A-Z])[\w-]+)?)\b.*$")
# "we're moving to Seattle", "I'm relocating to Denver for work"
_MOVING = rx(r"^(?:i|we)\s+(?:am|are|will\s+be)\s+(?:moving|relocating)\s+(?:back\s+)?to\s+",
             r"(?P<place>(?-i:[A-Z][\w-]+)(?:\s+(?-i:[A-Z][\w-]+))?)\b.*$")
# "I'm hosting Thanksgiving this year", "we're doing Christmas at my parents'"
_HOSTING = rx(r"^(?:i|we)\s+(?:am|are|will\s+be)\s+(?P<how>hosting|doing|having|spending)\s+",
              r"(?P<what>", _HOLIDAY, r")\b(?P<rest>.*)$")
# "Thanksgiving is at her place in Dayton after all", "Christmas will be at my sister's"
_HOLIDAY_AT = rx(r"^(?P<what>", _HOLIDAY, r")(?:'s|\s+is|\s+will\s+be)\s+(?:now\s+)?",
                 r"(?P<where>(?:at|in)\s+.+?)(?:\s+(?:after\s+all|instead|now|this\s+year))*$")
# "we booked 5 nights in Lisbon for our anniversary", "... booked a cabin instead for the
# anniversary": a plan keyed by the occasion it is for.
_OCCASION = (r"(?:anniversary|honeymoon|birthday|wedding|graduation|reunion|bachelorette|"
             r"bachelor\s+party|babymoon|retirement)")
_BOOKED_FOR = rx(r"^(?:i|we)\b.*?\b(?:booked|reserved|rented|planned)\s+(?P<thing>.+?)",
                 r"(?:\s+instead)?\s+for\s+(?:my|our|the|his|her|their)\s+",
                 r"(?P<what>(?:[\w'-]+\s+){0,2}?", _OCCASION, r")",
                 r"(?:\s+(?:trip|getaway|weekend|vacation))?$")
# "we just booked our honeymoon", "I booked a flight to Lima": a plan with no date yet.
_BOOKED = rx(r"^(?:i|we)\s+(?:have\s+|had\s+)?(?:just\s+|finally\s+)*(?:booked|reserved)\s+",
             r"(?:a|an|my|our|the)\s+(?P<what>(?:[\w'-]+\s+){0,2}?(?:", _ENTRY, r"|", _OCCASION,
             r")(?:\s+(?:to|in|for)\s+(?-i:[A-Z])[\w-]+)?)$")
# "got 4-day passes for the Harbor Fest", "I bought tickets to the Lorde show": a ticket is a
# plan to go, keyed by what it is for; "I sold my pass" gives it up.
_TICKET = (r"(?:(?:[\w-]+\s+){0,2}?(?:tickets?|passe?s?|wristbands?|seats|ga|vip|",
           r"general\s+admission))")
_TICKETS_FOR = rx(r"^(?:i|we)\s+(?:have\s+|just\s+|finally\s+)*(?:got|bought|booked|scored|",
                  r"grabbed|snagged|have)\s+(?:a\s+|an\s+|two\s+|2\s+)?", *_TICKET,
                  r"\s+(?:for|to)\s+(?:the\s+)?(?P<what>(?:[\w'-]+\s+){0,3}?[\w'-]+)$")
_TICKETS_SOLD = rx(r"^(?:i|we)\s+(?:have\s+|just\s+|had\s+to\s+)*(?:sold|gave\s+away|returned|",
                   r"refunded)\s+(?:my|our|the)\s+", *_TICKET, r"$")
# "we rebooked for Portugal", "I rebooked it in Porto": the plan being talked about, booked
# again somewhere else.
_REBOOKED = rx(r"^(?:i|we)\s+(?:just\s+|finally\s+)*(?:rebooked|re-booked)\s+(?:it\s+|everything\s+)?",
               r"(?:for|to|in|at)\s+(?P<place>(?-i:[A-Z])[\w-]+(?:\s+(?-i:[A-Z])[\w-]+)?)\b.*$")
# "the Tokyo trip got cancelled", "the wedding is off", "we called off the party"
_CANCELLED = rx(r"^(?:(?:bad\s+news|so|well|welp|sadly|ugh)[,\s]+)?(?:(?:my|our|the)\s+)?",
                r"(?P<what>(?:[\w'-]+\s+){0,3}?(?:", _ENTRY, r"|", _HOLIDAY, r")(?:\s+[\w-]+){0,2}?)",
                r"\s+(?:is|was|got|has\s+been|have\s+been|were)\s+(?:(?:officially|now|just)\s+)?",
                r"(?:cancell?ed|called\s+off|off|scrapped|scrubbed)(?:\s+now)?$")
_CANCEL = rx(r"^(?:i|we|they)\s+(?:have\s+|had\s+to\s+|just\s+)?(?:cancell?ed|called\s+off|",
             r"scrapped|bailed\s+on)\s+(?:my|our|the)\s+(?P<what>(?:[\w'-]+\s+){0,3}?(?:", _ENTRY,
             r"|", _HOLIDAY, r")(?:\s+[\w-]+){0,2}?)$")
# "I finally took the GRE: 328", "passed my driving test", "submitted the grant proposal"
_DONE = rx(r"^(?:i|we)\s+(?:have\s+|just\s+|finally\s+|officially\s+)*(?:took|passed|",
           r"aced|finished|completed|submitted|turned\s+in|sat|did)\s+(?:my|our|the)\s+",
           r"(?P<what>(?:[\w-]+\s+){0,3}?[\w-]+)(?P<result>\s*(?::|,|-|and\s+(?:got|scored))",
           r"\s*.+)?$")
# "so that's the date now", "which is the new date": a new date for the plan being talked
# about, which the clause does not name.
_THE_DATE_NOW = re.compile(r"(?:^|,\s*|\bso\s+)(?:that\s+is|which\s+is|that's)\s+(?:the|our|my)\s+"
                           r"(?:new\s+)?(?:date|day)(?:\s+now)?\s*$", re.I)
# A completion that names no plan: "submitted with an hour to spare", "I'm licensed!", "I
# passed!!" -- the one open plan of the kinds it completes.
_DONE_UNNAMED = [
    (rx(r"^(?:i\s+|we\s+)?(?:just\s+|finally\s+|officially\s+)*(?:submitted|turned\s+it\s+in|",
        r"sent\s+it\s+in|hit\s+submit)(?!\s+(?:my|our|the|a|an|his|her|their)\b)\b.*$"),
     ["deadline", "proposal", "application", "paper", "assignment", "report", "thesis", "essay",
      "grant", "submission", "due"]),
    (rx(r"^(?:i|we)\s+(?:am|are)\s+(?:officially\s+|finally\s+|now\s+)*(?:licensed|certified)$|",
        r"^(?:i|we)\s+(?:just\s+|finally\s+)*passed$"), ["exam", "test"]),
    # "it's over!! 328", "that's done": "it" is the plan being talked about, whatever its
    # kind (a letter held out, "overrr", is the same word).
    (rx(r"^(?:it|that)(?:'s|\s+is)\s+(?:finally\s+|officially\s+|all\s+)*(?:over+|done+|finished)",
        r"(?![\w-])(?!\s+(?:with|between)\b).*$"), ["plan"]),
]
# "Theo's soccer practice is Mondays at 5", "coach changed it, practice is Wednesdays now": a
# standing slot on the calendar, keyed by what it is and valued by its day of the week.
_STANDING = rx(r"(?:^|,\s*|\bso\s+)(?:(?:my|our|the|his|her|their)\s+)?",
               r"(?P<what>(?:[\w'-]+\s+){0,2}?[\w-]+)\s+(?:is|are)\s+(?:now\s+|still\s+)?(?:on\s+)?",
               r"(?P<day>(?:mon|tues|wednes|thurs|fri|satur|sun)day)s\b[^,;]*")
_ANNUAL_WORDS = frozenset("birthday anniversary name_day bday".split())
_NOT_A_PLAN = frozenset("today tomorrow tonight it this that there here which what who "
                        "everything nothing something".split())
_MOVED = rx(r"^(?:(?:i|we|they|he|she|the\s+\w+|\w+)\s+)?(?:have\s+|had\s+to\s+|had\s+|have\s+to\s+|",
            r"just\s+)?(?:moved|rescheduled|pushed|postponed|bumped|delayed|changed|shifted|",
            r"brought\s+forward|move|reschedule|push|postpone)\s+(?:back\s+)?",
            r"(?P<what>(?:my|our|the|his|her|their)\s+.+?)\s+(?:back\s+)?(?:to|until|till)$")


# "the wedding got pushed to October 4", "my interview was moved to Monday", and with the
# article dropped as people type it, "launch got pushed to July 22"
_MOVED_PASSIVE = rx(r"^(?P<what>(?:my|our|the|his|her|their)\s+.+?|(?:[\w-]+\s+){0,2}?", _ENTRY,
                    r")\s+(?:was|got|has\s+been|is|were|",
                    r"have\s+been|is\s+being)\s+(?:moved|rescheduled|pushed|postponed|bumped|delayed|",
                    r"changed|shifted|brought\s+forward)\s+(?:back\s+)?(?:to|until|till|for)$")
# "quick update: the launch ...", "remind me I have the dentist ...": words before what is
# said of the plan.
_HEADING = re.compile(r"^(?:(?:[\w-]+\s+){0,2}[\w-]+:|(?:please\s+)?remind\s+me\s+(?:that\s+)?"
                      r"(?=(?:i|we)\b))\s*(?=\S)", re.I)
# "moved to Monday", "it got pushed to the 14th", "the office called, they pushed me to the
# 19th": a new date for the plan being talked about, which the clause does not name (the date
# follows it; see ``_moved_unnamed``).
_MOVED_UNNAMED = rx(r"(?:^|,\s*|\b(?:it|that|they)\s+(?:was\s+|got\s+|has\s+been\s+|is\s+|",
                    r"were\s+|have\s+been\s+)?)(?:just\s+|now\s+)?(?:moved|rescheduled|pushed|",
                    r"postponed|bumped|delayed|shifted)\s+(?:(?:me|us)\s+)?(?:back\s+)?",
                    r"(?:to|until|till)\s+$")
# What happened before a plan changed, said first: "the venue flooded so ...", "ok, ...".
_CAUSE = re.compile(r"^.*(?:,\s*|\bso\s+)(?=(?:my|our|the)\s)", re.I)
# "my cousin Siobhan is getting married", "we're getting married": a wedding, keyed by whose
# (a name says it better than a relation, which two people may share).
_MARRYING = rx(r"^(?:(?:i|we)\s+(?:am|are)|(?:(?:my|our)\s+(?:[\w-]+\s+)?(?P<rel>[\w-]+)",
               r"(?:\s+(?P<name>(?-i:[A-Z])[\w-]+))?)\s+(?:is|are))\s+getting\s+married\b.*$")
# Why a plan moved, said after it: "... because half the panel is away", "due to the audit".
_REASON_TAIL = re.compile(r"\s+(?:because|cause|cuz|bc|due\s+to|thanks\s+to)\b.*$", re.I)
# "final round with Acme thursday at their office!!": a plan said as a noun phrase and its
# day, the way a calendar entry is written.
_ENTRY_PHRASE = rx(r"^(?:(?:my|our|the|a|an)\s+)?(?P<what>(?:[\w-]+\s+){0,2}?", _ENTRY,
                   r"(?:\s+(?:with|at|for|to)\s+(?-i:[A-Z])[\w-]+)?)(?:\s+(?:at|in)\s+.+)?$")
# "we're not going to Tokyo anymore", "I'm not flying to Denver after all"
_NOT_GOING = rx(r"^(?:i|we)\s+(?:am|are)\s+(?:not|no\s+longer)\s+(?:going|flying|heading|traveling|",
                r"travelling|driving|moving)\s+to\s+(?P<what>(?-i:[A-Z])[\w-]+(?:\s+(?-i:[A-Z])[\w-]+)?)",
                r"(?:\s+(?:any\s?more|after\s+all|this\s+year))*$")
# "the interview went well", "we just got back from Lisbon": a plan that has happened
_WENT = rx(r"^(?:my|our|the)\s+(?P<what>(?:[\w'-]+\s+){0,3}?", _ENTRY, r"(?:\s+[\w-]+){0,2}?)\s+",
           r"(?:went|was|is)\s+(?:really\s+|so\s+|super\s+)?(?:well|great|fine|ok|okay|badly|",
           r"horribly|amazing(?:ly)?|terribly|perfectly|smoothly|done|over)$")
_BACK_FROM = rx(r"^(?:i|we)\s+(?:am\s+|are\s+)?(?:just\s+|finally\s+)?(?:got\s+|came\s+|flew\s+)?",
                r"back\s+from\s+(?:the\s+|our\s+|my\s+)?(?P<what>(?:[\w'-]+\s+){0,2}?[\w'-]+)$")

_TIME_OF_DAY = re.compile(
    r"\s*\b(?:at\s+)?(?:\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)|noon|midnight|"
    r"(?:in\s+the\s+)?(?:morning|afternoon|evening|night))\b", re.I)


def schedule_key(what: str) -> str | None:
    """``schedule.<content words in order>`` for what is planned, or None when nothing names
    it."""
    words = [w for w in (slots.qualifier_of(what) or "").split("_") if w and w not in _GENERIC]
    return topics.plan_key(words)


def _plan(content: str, key: str | None, value: str | None, at: datetime,
          change: bool = True) -> Result | None:
    if key is None or not value:
        return None
    return Result(content, "event", key, value, 0.8, change, valid_from=at)


def lifecycle(text: str, at: datetime) -> Result | None:
    """A word on a plan that needs no date: cancelled, done, where it is now, what it was
    booked for."""
    body = squash(text)
    for pattern, kinds in _DONE_UNNAMED:
        if pattern.match(body):
            said = (body if re.match(r"^(?:i|we|it|that)\b", body, re.I)
                    else f"I {body[:1].lower()}{body[1:]}")
            return _plan(third_person(said), topics.plan_key(kinds), "done", at)
    m = _STANDING.search(body)
    if m is not None and m["what"].lower() not in _NOT_A_PLAN:
        said = re.sub(r"^(?:,\s*|so\s+)", "", m.group(), flags=re.I)
        return _plan(third_person(said[:1].upper() + said[1:]), schedule_key(m["what"]),
                     m["day"].lower(), at, bool(re.search(r"\b(?:now|instead)\b", said, re.I)))
    m = _CANCELLED.match(body) or _CANCEL.match(body)
    if m is not None:
        return _plan(third_person(body), schedule_key(m["what"]), "cancelled", at)
    m = _NOT_GOING.match(body)
    if m is not None:
        return _plan(third_person(body), schedule_key(m["what"]), "cancelled", at)
    m = _WENT.match(body) or _BACK_FROM.match(body)
    if m is not None:
        return _plan(third_person(body), schedule_key(m["what"]), "done", at)
    m = _DONE.match(body)
    if m is not None and m["what"].split()[-1].lower() not in _NOT_A_PLAN:
        return _plan(third_person(body), schedule_key(m["what"]), "done", at)
    m = _HOLIDAY_AT.match(re.split(r"^.*?(?:,\s*|\bso\s+)(?=" + _HOLIDAY + ")", body,
                                   maxsplit=1, flags=re.I)[-1])
    if m is not None:
        return _plan(third_person(body), schedule_key(m["what"]),
                     slots.value_form(re.sub(r"^(?:at|in)\s+", "", m["where"], flags=re.I)), at)
    m = _HOSTING.match(body)
    if m is not None:
        return _plan(third_person(body), schedule_key(m["what"]), m["how"].lower(), at, False)
    m = _BOOKED_FOR.match(body)
    if m is not None:
        return _plan(third_person(body), schedule_key(m["what"]), slots.value_form(m["thing"]),
                     at, bool(re.search(r"\binstead\b", body, re.I)))
    m = _TICKETS_FOR.match(body)
    if m is not None:
        return _plan(third_person(body), schedule_key(f"{m['what']} ticket"), "booked", at, False)
    if _TICKETS_SOLD.match(body):
        return _plan(third_person(body), topics.plan_key(["ticket"]), "cancelled", at)
    m = _BOOKED.match(body)
    if m is not None:
        return _plan(third_person(body), schedule_key(m["what"]), "booked", at, False)
    m = _REBOOKED.match(body)
    if m is not None:
        return _plan(third_person(body), topics.plan_key(["plan"]), slots.value_form(m["place"]),
                     at)
    return None


def scheduled(text: str, date: DateMatch | None, at: datetime) -> Result | None:
    """A plan, a plan moved to a new date, or another word on a plan (``lifecycle``), in
    ``text`` (contractions expanded)."""
    heading = _HEADING.match(text)
    if heading is not None:
        text = text[heading.end():]
        date = find_date(text, at, guess_tense(text)) if date is not None else None
    if date is None:
        return lifecycle(text, at)
    body = squash(remove_date(text, date))
    bare = squash(_TIME_OF_DAY.sub(" ", body))
    if _THE_DATE_NOW.search(bare):
        # The date that the clause gives last, with a day ("the only Saturday left was
        # October 4th, so that's the date now").
        days = [d for d in find_dates(text, at, "future") if d.granularity == "day"]
        if days:
            new = days[-1]
            return Result(third_person(squash(text)), "event", topics.plan_key(["date"]),
                          new.when.date().isoformat(), 0.75, True, valid_from=new.when)
    unnamed = _moved_unnamed(text, date, at)
    if unnamed is not None:
        return unnamed
    bare = _REASON_TAIL.sub("", bare)
    moved = _MOVED.match(bare) or _MOVED_PASSIVE.match(bare)
    if moved is not None:
        later = find_date(text, at, "future") or date
        key = schedule_key(moved["what"])
        if key is None:
            return None
        moved_to = re.sub(r"\s+(?:back\s+)?(?:to|until|till|for)$", "", bare)
        return Result(f"{third_person(moved_to)} to {_new_day(later)}", "event", key,
                      later.when.date().isoformat(), 0.8, True, valid_from=later.when)
    # "I have the dentist at 2pm, it's the crown thing": the plan is said in the first clause;
    # "the venue flooded so the wedding is now ...": in the clause that says what followed.
    first_clause = re.split(r"\s*,\s*", bare, maxsplit=1)[0]
    outcome = _CAUSE.sub("", bare)
    plan = (_PLAN.match(bare) or _MY_PLAN.match(bare) or _PLAN.match(first_clause)
            or _MY_PLAN.match(outcome))
    what = plan["what"] if plan is not None else None
    if plan is None:
        plan = _MARRYING.match(bare)
        what = f"{plan['name'] or plan['rel'] or ''} wedding" if plan is not None else None
    if plan is None:
        plan = _MOVING.match(bare)
        what = f"move {plan['place']}" if plan is not None else None
    if plan is None:
        plan = _BOOKED_FOR.match(bare) or _HOSTING.match(bare) or _DOING.match(bare)
        what = plan["what"] if plan is not None else None
    if plan is None:
        plan = _TRAVEL.match(bare)
        what = f"trip {plan['place']}" if plan is not None else None
    if plan is None and bare.strip() and date.when > at and (
            squash(text).startswith(bare.split()[0])):
        plan = _ENTRY_PHRASE.match(bare)
        what = plan["what"] if plan is not None else None
    if plan is None and date.when > at:
        # The first part of the clause only: "GRE is aug 9 and my quant is shaky".
        first = re.split(r"\s+and\s+|,", bare, maxsplit=1)[0]
        plan = _NAMED_PLAN.match(first)
        if plan is not None:
            text = re.split(r"\s+and\s+|,", text, maxsplit=1)[0]
            date = find_date(text, at, "future")
            if date is None:
                return None
        what = plan["what"] if plan is not None else None
        if what is not None and (set(what.lower().split()) & (_ANNUAL_WORDS | _NOT_A_PLAN)
                                 or re.match(r"^(?:i|we|you|he|she|they|it)\b", what, re.I)):
            return None
    if plan is None or what is None:
        # "the Tokyo trip was cancelled last week", "I took the GRE on Saturday"
        return lifecycle(remove_date(text, date), at)
    if set(slots.qualifier_of(what).split("_") if slots.qualifier_of(what) else ()) & _ANNUAL_WORDS \
            and _BOOKED_FOR.match(bare) is None:
        return None
    key = schedule_key(what)
    if key is None:
        return None
    # What is booked or planned lies ahead: "got an appointment on Friday" is next Friday.
    date = find_date(text, at, "future") or date
    body = re.sub(r"\s+(?:on|at|for|in)$", "", squash(remove_date(text, date)))
    # "the move is September now": a new date for a plan already told.
    change = bool(re.search(r"\b(?:now|instead)\b", bare, re.I))
    return Result(f"{third_person(body)} {render(date)}", "event", key,
                  date.when.date().isoformat(), 0.8, change, valid_from=date.when)


def _moved_unnamed(text: str, date: DateMatch, at: datetime) -> Result | None:
    """"it's remote now, moved to Monday": the new date of the plan being talked about, under
    the key of any plan (the write path finds the one open plan it is, and puts the date in
    that plan's statement). The clause is kept up to its date."""
    start = text.find(date.text)
    if start < 0 or _MOVED_UNNAMED.search(text[:start]) is None:
        return None
    if _MOVED.match(text[:start].strip()) or _MOVED_PASSIVE.match(text[:start].strip()):
        return None  # it names its plan
    later = find_date(text, at, "future") or date
    said = third_person(squash(text[:start]))
    return Result(f"{said} {_new_day(later)}", "event", topics.plan_key(["date"]),
                  later.when.date().isoformat(), 0.75, True, valid_from=later.when)


def _new_day(date: DateMatch) -> str:
    """A plan's new date as the statement says it: the day of the week kept when that is
    how it was said ("moved to Monday" → "Monday 2026-06-08"), as people ask by it."""
    iso = render(date).removeprefix("on ")
    if squash(date.text).casefold().removeprefix("on ").removeprefix("next ") in _WEEKDAYS:
        return f"{date.when:%A} {iso}"
    return iso


_WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
