"""Secrets in text: what must never become a memory (passwords, keys, tokens, card and
account numbers).

``find`` returns the spans of every secret value in a text, ``contains_secret`` says whether
there is one, ``redact`` masks them. A leaf: the standard library and detect-secrets only.

Three kinds of evidence, each precise on its own:

- **Token formats**, through detect-secrets' own regex plugins (AWS, GitHub, GitLab, Slack,
  Stripe, Twilio, SendGrid, JWT, private key blocks, basic-auth URLs, ...), run in-process:
  each plugin's ``denylist`` regexes give the spans (``analyze_line`` gives only values, and
  consults global settings for verification). A few current formats detect-secrets 1.5 does
  not know are added (``sk-...`` keys, Google API keys, fine-grained GitHub tokens, ...).
  Left out on purpose: the entropy plugins (ids, hashes and ordinary prose would be
  flagged), ``KeywordDetector`` (built for code: it misses "the wifi password is hunter2";
  the prose rules below replace it) and ``IPPublicDetector`` (an address is not a secret).
- **Checksummed numbers**: 13-19 digits, ungrouped or grouped by one kind of separator
  (space or dash; the first group 4+ digits, inner groups 3+), not beginning with 0 (the
  industry digit no card issuer has), that pass Luhn are a card; an
  IBAN has its country's length and passes mod-97; ``NNN-NN-NNNN`` in the SSA's valid ranges
  is a US SSN.
- **Prose forms**: a secret noun, then a stated value: "the wifi password is hunter2",
  "my PIN: 1234", "the password for the router is x", "changed my password to Tr0ub4dor&3",
  "hunter2 is the wifi password". The span is the value; callers drop the whole clause.

Decisions (each has a test on both sides):

- A keyword without a value is no secret: "I forgot my password again", "the password reset
  link expired", "the password is on the fridge / wrong / 12 characters long" (the word after
  "is" is a place, a judgement or a length, not a value).
- Numbers are secrets only beside their noun: "my PIN is 1234", "our alarm code is 4512",
  "the combination is 12-34-56", "account number 12345678". A bare "code" is not a noun of
  its own (zip, area, promo, error codes); a locker *number* is not a secret, a locker
  *code* or combination is. "ends in 4321" states no value (the last digits of a card or
  account are printed on receipts).
- "token" and "secret" on their own are ordinary words ("a token of thanks", "the secret is
  patience"): their value must look machine-made (8+ characters with letters and digits, or
  16+ word characters). Qualified nouns ("access token", "client secret") take any value.
- Not secrets: phone numbers, dates, times, prices, versions, years, zip codes, flight and
  order numbers, UUIDs and hex ids in prose (identifiers, not credentials; one stated as a
  key's value is caught by the prose form), email and IP addresses, passport numbers (personal
  data, not credentials). A 13-19 digit run labelled as an order, tracking, IMEI, ISBN,
  phone or similar number is not read as a card.
- Known gap, accepted: a Luhn-valid unlabelled 13+ digit number (a millisecond timestamp) is
  read as a card one time in ten; a value in a sentence apart from its noun ("What's the alarm
  code? It's 4512.") is not seen.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


__all__ = ["Secret", "contains_secret", "find", "redact"]


@dataclass(frozen=True)
class Secret:
    """A secret value at ``text[start:end]``. Kinds: password, pin, access_code,
    card_security_code, card_number, account_number, iban, ssn, national_id, api_key,
    license_key, token, secret, recovery_phrase, aws_key, private_key."""

    start: int
    end: int
    kind: str


def find(text: str) -> list[Secret]:
    """Every secret value in ``text``: non-overlapping spans, sorted by start."""
    # On equal spans the first kind stays: a token's format, then what the text calls it
    # ("the alarm PIN is 001-01-0001" is a PIN, not an SSN), then a number's shape.
    return _merged([*_formats(text), *_prose(text), *_cards(text), *_ibans(text), *_ssns(text)])


def contains_secret(text: str) -> bool:
    return bool(find(text))


def redact(text: str, mask: str = "[secret]") -> str:
    """``text`` with every found span replaced by ``mask``."""
    parts, pos = [], 0
    for s in find(text):
        parts += [text[pos:s.start], mask]
        pos = s.end
    parts.append(text[pos:])
    return "".join(parts)


def _merged(found: list[Secret]) -> list[Secret]:
    """Overlapping spans become one (the first one's kind)."""
    out: list[Secret] = []
    for s in sorted(found, key=lambda s: (s.start, -s.end)):
        if out and s.start < out[-1].end:
            if s.end > out[-1].end:
                out[-1] = Secret(out[-1].start, s.end, out[-1].kind)
            continue
        out.append(s)
    return out


# -- Token formats ---------------------------------------------------------------------

@functools.cache
def _detectors() -> tuple[tuple[Any, str, Callable[[str], bool] | None], ...]:
    """detect-secrets' format plugins with the kind each finds and, where a match can have
    the token's shape but not its content, the plugin's own check (a JWT whose parts are not
    JSON). Loaded on first use: importing them (and the requests they import for verifying
    over the network, which strata never does) is a quarter of a second no cold start that
    writes nothing should pay."""
    from detect_secrets.plugins.artifactory import ArtifactoryDetector
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.cloudant import CloudantDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
    from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.npm import NpmDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.softlayer import SoftlayerDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    detectors = (
        (AWSKeyDetector(), "aws_key"),
        (ArtifactoryDetector(), "token"),
        (AzureStorageKeyDetector(), "api_key"),
        (BasicAuthDetector(), "password"),
        (CloudantDetector(), "api_key"),
        (DiscordBotTokenDetector(), "token"),
        (GitHubTokenDetector(), "token"),
        (GitLabTokenDetector(), "token"),
        (IbmCloudIamDetector(), "api_key"),
        (IbmCosHmacDetector(), "api_key"),
        (JwtTokenDetector(), "token"),
        (MailchimpDetector(), "api_key"),
        (NpmDetector(), "token"),
        (OpenAIDetector(), "api_key"),
        (PrivateKeyDetector(), "private_key"),
        (PypiTokenDetector(), "token"),
        (SendGridDetector(), "api_key"),
        (SlackDetector(), "token"),
        (SoftlayerDetector(), "api_key"),
        (SquareOAuthDetector(), "api_key"),
        (StripeDetector(), "api_key"),
        (TelegramBotTokenDetector(), "token"),
        (TwilioKeyDetector(), "api_key"),
    )
    return tuple((d, kind, JwtTokenDetector.is_formally_valid
                  if isinstance(d, JwtTokenDetector) else None) for d, kind in detectors)


# Formats detect-secrets 1.5 does not know (OpenAI's plugin only knows the 2023 key shape).
_MORE_FORMATS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?<![\w-])sk-(?=[\w-]*\d)[A-Za-z0-9_-]{20,}"), "api_key"),  # OpenAI, Anthropic
    (re.compile(r"(?<![\w-])(?:sk|rk)_test_[0-9a-zA-Z]{24,}"), "api_key"),  # Stripe test mode
    (re.compile(r"AIza[0-9A-Za-z_-]{35}"), "api_key"),  # Google
    (re.compile(r"github_pat_[A-Za-z0-9_]{22,}"), "token"),
    (re.compile(r"(?<![\w-])hf_[A-Za-z0-9]{30,}"), "token"),  # Hugging Face
    (re.compile(r"(?i:bearer)\s+([A-Za-z0-9._~+/-]{20,}=*)"), "token"),
)

_TOKEN_CHAR = re.compile(r"[\w-]")
_KEY_BLOCK_END = re.compile(r"-----END [A-Z0-9 ]*-----|---- END SSH2 [A-Z ]*----")


def _formats(text: str) -> Iterator[Secret]:
    for detector, kind, valid in _detectors():
        for regex in detector.denylist:
            for m in regex.finditer(text):
                start, end = _trimmed(text, *_value_span(m))
                if start >= end or (valid and not valid(text[start:end])):
                    continue
                if kind == "private_key":
                    yield _key_block(text, start, end)
                else:
                    yield Secret(*_widened(text, start, end), kind)
    for regex, kind in _MORE_FORMATS:
        for m in regex.finditer(text):
            yield Secret(*_widened(text, *_value_span(m)), kind)


def _value_span(m: re.Match[str]) -> tuple[int, int]:
    """The first non-empty group (the value, as the plugin itself yields it), else the match."""
    for g in range(1, (m.re.groups or 0) + 1):
        if m.start(g) < m.end(g):
            return m.start(g), m.end(g)
    return m.span()


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    # Some plugins match the delimiters around a token (Artifactory: ``(?:\s|=|:|"|^)``).
    while start < end and text[start] in ' \t\r\n=:"\'':
        start += 1
    while end > start and text[end - 1] in ' \t\r\n"\'':
        end -= 1
    return start, end


def _widened(text: str, start: int, end: int) -> tuple[int, int]:
    """Out to the whole token: some plugins match a fixed-length prefix (Stripe's keys grew
    past the 24 characters its regex reads) or capture only a prefix (GitHub's group is
    ``ghp``), and a redacted tail would still be the key."""
    while start > 0 and _TOKEN_CHAR.match(text, start - 1):
        start -= 1
    while end < len(text) and _TOKEN_CHAR.match(text, end):
        end += 1
    return start, end


def _key_block(text: str, start: int, end: int) -> Secret:
    """A private key is the whole block: from its BEGIN line's dashes to its END line (or to
    the end of the text)."""
    while start > 0 and text[start - 1] in "- ":
        start -= 1
    while text[start] == " ":
        start += 1
    tail = _KEY_BLOCK_END.search(text, end)
    return Secret(start, tail.end() if tail else len(text), "private_key")


# -- Checksummed numbers ----------------------------------------------------------------

# Digit groups joined by one space or dash, standing alone: not part of a word, a decimal
# (3.14159...), a price (1,299.99) or an international phone number (+49...).
_DIGIT_RUN = re.compile(r"(?<![\w.,+-])\d++(?:[ -]\d++)*+(?!\w|[.,-]\d)")
_DIGITS = re.compile(r"\d+")
# Labels of other long numbers; IMEIs even pass Luhn.
_OTHER_NUMBER = re.compile(
    r"\b(?i:order|tracking|isbn|imei|invoice|ticket|booking|reference|ref|confirmation|serial"
    r"|phone|tel|mobile|cell|fax|parcel|package|shipment|transaction|receipt|member(?:ship)?"
    r"|customer|policy|case|claim)\b[^.;\n\d]{0,12}$")
_CARD_WORD = re.compile(r"(?i:card|visa|master|amex|credit|debit|cc)\b")


def _cards(text: str) -> Iterator[Secret]:
    for run in _DIGIT_RUN.finditer(text):
        groups = [(m.start() + run.start(), m.end() + run.start())
                  for m in _DIGITS.finditer(run.group())]
        i = 0
        while i < len(groups):
            j = _card_window(text, groups, i)
            if j is None:
                i += 1
                continue
            start, end = groups[i][0], groups[j][1]
            before = text[max(0, start - 30):start]
            if not (_OTHER_NUMBER.search(before) and not _CARD_WORD.search(before)):
                yield Secret(start, end, "card_number")
            i = j + 1


def _card_window(text: str, groups: list[tuple[int, int]], i: int) -> int | None:
    """The last group of the longest card number starting at group ``i``, if any. Groups
    of one or two digits are lists of small numbers ("10 12 15 ..."), not a card."""
    # 19 digits at most, in groups of 3+ but the last: never more than 6 groups.
    for j in range(min(len(groups) - 1, i + 5), i - 1, -1):
        sizes = [e - s for s, e in groups[i:j + 1]]
        if not 13 <= sum(sizes) <= 19 or sizes[0] < 4 or any(n < 3 for n in sizes[1:-1]):
            continue
        if len({text[groups[k][1]] for k in range(i, j)}) > 1:  # one kind of separator
            continue
        if text[groups[i][0]] == "0":  # no issuer's numbers begin with 0 (ISO/IEC 7812)
            continue
        if _luhn("".join(text[s:e] for s, e in groups[i:j + 1])):
            return j
    return None


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


_IBAN_SHAPE = re.compile(r"(?<![A-Za-z0-9])([A-Z]{2})\d{2}(?: ?[A-Z0-9]){11,30}+")

# Each country's IBAN length (the SWIFT IBAN registry): an IBAN ends where its length says,
# however the text runs on ("DE89... IS MY IBAN"), and no shorter prefix of it is taken for
# one (a prefix passes mod-97 one time in 97).
_IBAN_LENGTHS = {
    **dict.fromkeys("NO".split(), 15), **dict.fromkeys("BE".split(), 16),
    **dict.fromkeys("DK FI FO GL NL SD FK".split(), 18), **dict.fromkeys("MK SI".split(), 19),
    **dict.fromkeys("AT BA EE KZ LT LU MN XK".split(), 20),
    **dict.fromkeys("CH HR LI LV".split(), 21),
    **dict.fromkeys("BG BH CR DE GB GE IE ME RS VA".split(), 22),
    **dict.fromkeys("AE GI IL IQ OM SO TL".split(), 23),
    **dict.fromkeys("AD CZ ES MD PK RO SA SE SK TN VG".split(), 24),
    **dict.fromkeys("LY PT ST".split(), 25), **dict.fromkeys("IS TR".split(), 26),
    **dict.fromkeys("BI DJ FR GR IT MC MR SM".split(), 27),
    **dict.fromkeys("AL AZ BY CY DO GT HN HU LB NI PL SV".split(), 28),
    **dict.fromkeys("BR EG PS QA UA".split(), 29), **dict.fromkeys("JO KW MU YE".split(), 30),
    **dict.fromkeys("MT SC".split(), 31), "LC": 32, "RU": 33,
}


def _ibans(text: str) -> Iterator[Secret]:
    for m in _IBAN_SHAPE.finditer(text):
        length = _IBAN_LENGTHS.get(m.group(1))
        if length is None:
            continue
        chars = [k for k in range(m.start(), m.end()) if text[k] != " "]
        if len(chars) < length:
            continue
        end = chars[length - 1] + 1
        if end < m.end() and text[end] != " ":
            continue  # the IBAN would end inside a group
        if _iban_ok(text[m.start():end].replace(" ", "")):
            yield Secret(m.start(), end, "iban")


def _iban_ok(compact: str) -> bool:
    if not 2 <= int(compact[2:4]) <= 98:
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


# Area 000, 666 and 9xx, group 00 and serial 0000 are never issued.
_SSN = re.compile(r"(?<![\w-])(?!000|666|9)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\w-])")


def _ssns(text: str) -> Iterator[Secret]:
    for m in _SSN.finditer(text):
        yield Secret(m.start(), m.end(), "ssn")


# -- Prose forms ------------------------------------------------------------------------
#
# <secret noun> [for the router] <is | : | = | changed to> <value>, and the reverse
# "<value> is the wifi password". Whether a value was stated is decided by what follows the
# noun: a word that describes the secret (wrong, expired, on, the, ...) states none.

_START = r"(?<![A-Za-z0-9])"
_END = r"(?![A-Za-z0-9])"
_S = r"[ _-]"  # between the words of a noun: "api key", "api_key", "api-key"

# Words that describe a secret rather than give it ("the password is expired / on the
# fridge / probably fine"). A list, not a suffix rule: "the password is aaaaaaed" gives one.
_NOT_VALUE_WORDS = (
    # function words
    "a an the my your his her our their its this that these those it one mine yours ours "
    "in on at under behind inside with without for from by to of into onto near like "
    "not no none never still also just now too very so quite really pretty rather always "
    "here there somewhere elsewhere what which whatever where when how why who whoever if "
    "because and or but then than something anything nothing everything someone somebody "
    "nobody everyone all any some both either each every is are was were be been being has "
    "have had will would can could should must may might does did do n/a na tbd "
    # judgements and states
    "same different wrong right correct incorrect invalid valid weak strong secure insecure "
    "safe unsafe long short simple easy hard difficult complex new old temporary default "
    "blank empty optional mandatory necessary fine ok okay good bad great terrible awful "
    "annoying impossible stupid silly funny random unique case sensitive hidden visible known "
    "unknown due about ready more less unchanged personal special obvious common popular "
    "generic typical standard normal memorable guessable unguessable crackable unbreakable "
    "available reasonable horrible predictable unpredictable readable unreadable "
    # participles
    "expired expiring changed changing encrypted hashed salted saved stored locked blocked "
    "disabled enabled required needed shared protected compromised leaked hacked stolen "
    "updated generated rotated rotating printed attached included enclosed listed noted "
    "mentioned provided emailed texted taped pinned synced managed used reused reset removed "
    "deleted revoked renewed regenerated accepted rejected working failing missing pending "
    "coming going getting doing done typed entered copied pasted cached remembered memorized "
    "memorised shown written sent kept made given broken taken found bought told said left "
    "put stuck forgotten chosen frozen lost gone set supposed meant got gets keeps "
    # adverbs
    "usually probably definitely actually currently likely obviously apparently basically "
    "literally seriously totally simply only clearly certainly surely possibly mostly "
    "hopefully honestly technically supposedly exactly nearly almost even already again"
).split()
# A whole word: "wrong." is the word wrong, "IS+0" is not the word is.
_WORD_END = r"(?=[.,;:!?)\"'’”]*(?:\s|$))"
_NOT_VALUE = (
    r"(?![:=])"  # "'api_keys'::regclass" is SQL, not an assignment
    # A mask stands in for a value: redacted text holds no secret ("the pin is [secret]").
    rf"(?!(?:\[[^\s\]]*\]|<[^\s>]*>|\*+){_WORD_END})"
    r"(?!(?i:" + "|".join(re.escape(w) for w in _NOT_VALUE_WORDS) + rf"){_WORD_END})"
)
# "12 characters long", "4 digits": a length, not the value (unless the clause ended first:
# "the password is hunter2, number two ...").
_NO_UNIT = (r"(?:(?<=[.,;:!?])|(?!\s+(?i:characters?|chars?|digits?|letters?|numbers?|symbols?"
            r"|words?|long|times?|days?|weeks?|months?|years?|hours?|minutes?|mins?|seconds?"
            r"|attempts?|tries|ago|percent|km|miles?|kg|lbs?)(?![A-Za-z])))")
_QUOTED = "|".join(rf"{o}[^{c}\n]{{1,200}}{c}" for o, c in ('""', "“”", "''", "‘’", "``"))
_TOKEN = r"\S{1,200}+"
# Looks chosen, not said: a digit, a symbol inside it, or a capital after a small letter.
_CRED_LIKE = r"(?=\S*?(?:\d|[a-z][A-Z]|[!@#$%^&*+=~|\\/<>{}\[\]_-]\S))"
_MACHINE_MADE = r"(?:(?=\S*\d)(?=\S*[A-Za-z])\S{8,200}+|[\w-]{16,200}+)"
_NUMBER = r"(?>[#*]?\d+(?:[ -]\d+)*+[#*]?(?![\w-])|[#*]?(?=[\w-]*\d)[\w#*-]{1,60}+)"

# Stated: "is", ":", "=", "is now", "changed to"; a quote may close a JSON or code key.
_SAYS = (r"(?:[\"']?\s*(?::=|=>|->|→|[:=])\s*"
         r"|\s+(?i:is|was|are|were)(?:\s+(?i:now|currently|actually|simply))?\s*:?\s+"
         r"|\s+(?i:(?:is|was|has\s+been|got)\s+)?(?i:set|changed|reset|updated|switched)\s+to\s+)")
# "the password for the wifi is ...": a short qualifier before a stated value.
_FOR = r"(?:\s+(?i:for|to|of|on|at|in)(?:\s+[^\s:=]+){1,4}?)?"
# Said loosely ("wifi password hunter2", "changed my password to Tr0ub4dor&3", "password's
# hunter2", where "'s" is mostly a possessive: "the password's length"): the value must
# look chosen.
_SAYS_LOOSELY = r"(?:\s+(?i:to|as|of)\s+|['’]s\s+|\s+)"

_STATED = rf"(?:{_FOR}{_SAYS}(?P<v>{_QUOTED}|{_NOT_VALUE}{_TOKEN}){_NO_UNIT}" \
          rf"|{_SAYS_LOOSELY}(?P<w>{_NOT_VALUE}{_CRED_LIKE}{_TOKEN}){_NO_UNIT})"
_LOOSE = rf"(?:{_FOR}{_SAYS}(?P<v>{_QUOTED}|{_NOT_VALUE}{_TOKEN}){_NO_UNIT}" \
         rf"|{_SAYS_LOOSELY}(?P<w>{_NOT_VALUE}{_TOKEN}){_NO_UNIT})"
_NUMERIC = (rf"(?:{_FOR}{_SAYS}|\s+(?i:to|as|of)\s+|['’]s\s+|\s+|\s*#\s*)"
            rf"(?P<v>{_NUMBER}){_NO_UNIT}")
# A code's noun is unambiguous ("the alarm code is 22aaaaaa"), but said loosely ("garage
# code to 7781", "locker combo 12-7-33") only digits are its value.
_CODE = (rf"(?:{_FOR}{_SAYS}(?P<v>{_QUOTED}|{_NOT_VALUE}{_TOKEN}){_NO_UNIT}"
         rf"|(?:\s+(?i:to|as|of)\s+|['’]s\s+|\s+|\s*#\s*)(?=(?:\S*?\d){{3}})(?P<w>{_NUMBER})"
         rf"{_NO_UNIT})")
_MACHINE = rf"(?:{_FOR}{_SAYS}|\s+)(?P<v>{_MACHINE_MADE})"
_PHRASE = rf"{_FOR}{_SAYS}(?P<v>{_NOT_VALUE}[^.;!?\n]{{1,500}})"
# "login is bob/hunter2"; not "login is bob / pw x" (the password rule finds "x", and a
# username is no secret), a URL or a time.
_PAIR = (rf"{_SAYS}(?P<v>(?!\S*://)(?!\d{{1,2}}:\d\d(?!\S))[^\s/:]+\s*[/:]\s*"
         rf"(?!(?i:pw|pwd|passwd|pass|password)(?![A-Za-z0-9]))[^\s/:]+)")

_DET = r"(?i:the|my|our|your|his|her|their|a|an)"
_MODIFIER = rf"{_NOT_VALUE}[\w'’-]+"


@dataclass(frozen=True)
class _Rule:
    kind: str
    nouns: str
    value: str
    min_digits: int = 0
    reverse: bool = True  # also "<value> is the <noun>"


_CODE_PLACE = (r"alarm|door|gate|garage|lock|locker|safe|keypad|building|entry|access|unlock"
               r"|security|disarm|house|apartment|padlock|lock{S}?box|key{S}?(?:box|safe)|bike"
               r"{S}lock|2fa|mfa|otp|one{S}time|verification|login|sign{S}?in|backup|recovery"
               r"|master|parking|phone|wi{S}?fi").replace("{S}", _S)

_RULES = (
    _Rule("password", rf"pass(?:word|phrase|code)s?|pass{_S}(?:word|phrase|code)s?"
                      rf"|master{_S}key|(?:network|wi{_S}?fi|wpa2?|wep)(?:{_S}security)?{_S}key"
                      rf"|security{_S}(?:answer|key)|secret{_S}answer"
                      rf"|unlock{_S}(?:pattern|password)", _STATED),
    # Abbreviations with no other everyday sense: whatever follows is the value ("pw x").
    _Rule("password", r"pw|pwd|passwd", _LOOSE),
    # "pass" is an everyday word: only "pass: ..." / "pass=..." with a value that has a
    # letter and a digit or symbol ("Day pass: $20" is a price).
    _Rule("password", r"pass", rf"\s*[:=]\s*(?P<v>(?=\S*[A-Za-z]){_CRED_LIKE}{_TOKEN})",
          reverse=False),
    _Rule("password", rf"credentials|creds|login{_S}(?:details|info|credentials)", _STATED),
    _Rule("password", rf"login|log{_S}?in|sign{_S}?in|user{_S}?name", _PAIR, reverse=False),
    _Rule("access_code", rf"(?:{_CODE_PLACE}){_S}(?:code|pin|combination|combo)s?"
                         rf"|(?:code|pin|combination|combo)\s+(?i:for|to|of|on)\s+(?:{_DET}\s+)?"
                         rf"(?:front\s+|back\s+|main\s+)?(?:{_CODE_PLACE})", _CODE),
    # Everyday words too ("a combination of factors"): only digits.
    _Rule("access_code", r"combination|combo|otp", _NUMERIC, 3),
    _Rule("pin", rf"pin(?:{_S}?(?:code|number|no\.?|#))?|sim{_S}pin|puk(?:{_S}code)?",
          _NUMERIC, 3),
    _Rule("card_security_code", rf"cvv2?|cvc2?|csc|card{_S}(?:security|verification)"
                                rf"{_S}(?:code|value|number)", _NUMERIC, 3),
    _Rule("card_number", rf"(?:credit|debit|bank|visa|master{_S}?card|amex|payment){_S}card"
                         rf"(?:{_S}(?:number|no\.?|num|#))?|card{_S}(?:number|no\.?|num|#)"
                         rf"|cc{_S}?(?:number|no\.?|num|#)", _NUMERIC, 8),
    _Rule("account_number",
          rf"(?:(?:bank|checking|chequing|savings|current|brokerage|investment){_S})?account"
          rf"{_S}(?:number|no\.?|num|#)|acct\.?(?:{_S}(?:number|no\.?|num|#))?"
          rf"|(?:bank|checking|chequing|savings){_S}account|routing{_S}(?:number|no\.?|#)"
          rf"|aba(?:{_S}routing)?{_S}(?:number|no\.?)|sort{_S}code|bsb(?:{_S}number)?"
          rf"|transit{_S}number", _NUMERIC, 4),
    _Rule("iban", r"iban", _NUMERIC, 4),
    _Rule("ssn", rf"ssn|social{_S}security(?:{_S}(?:number|no\.?|#))?", _NUMERIC, 4),
    _Rule("national_id", rf"(?:national|social){_S}insurance(?:{_S}(?:number|no\.?|#))?"
                         rf"|ni{_S}(?:number|no\.?)", _NUMERIC, 4),
    _Rule("api_key", rf"api{_S}?keys?|access{_S}keys?(?:{_S}id)?|secret{_S}(?:access{_S})?keys?"
                     rf"|(?:client|app|application|consumer|webhook|shared|signing|jwt|api)"
                     rf"{_S}secrets?|(?:private|signing|encryption){_S}keys?", _STATED),
    _Rule("license_key", rf"(?:license|licence|product|serial|activation|registration)"
                         rf"{_S}keys?", _STATED),
    _Rule("token", rf"(?:access|auth|authentication|bearer|refresh|api|session|personal{_S}"
                   rf"access|bot|oauth|id|csrf|github|gitlab|slack|discord|telegram|npm|pypi"
                   rf"|jwt|security|app){_S}tokens?", _STATED),
    _Rule("token", r"tokens?", _MACHINE),
    _Rule("secret", r"secrets?", _MACHINE),
    _Rule("recovery_phrase", rf"(?:seed|recovery|backup|mnemonic|wallet|secret){_S}"
                             rf"(?:phrase|words)|mnemonic|recovery{_S}key", _PHRASE,
          reverse=False),
)


def _forward(rule: _Rule) -> re.Pattern[str]:
    return re.compile(rf"{_START}(?i:{rule.nouns}){_END}{rule.value}")


def _backward(rule: _Rule) -> re.Pattern[str] | None:
    if not rule.reverse:
        return None
    value = (_NUMBER if rule.min_digits else _MACHINE_MADE if rule.value == _MACHINE
             else rf"{_CRED_LIKE}{_TOKEN}")
    return re.compile(rf"(?<!\S)(?P<v>{value})\s+(?i:is|was|as)\s+{_DET}\s+"
                      rf"(?:{_MODIFIER}\s+){{0,2}}?(?i:{rule.nouns}){_END}")


_COMPILED = tuple((rule, _forward(rule), _backward(rule)) for rule in _RULES)
# One pass finds whether any noun is there at all: most clauses have none.
_ANY_NOUN = re.compile(rf"{_START}(?i:{'|'.join(rule.nouns for rule in _RULES)}){_END}")


def _prose(text: str) -> Iterator[Secret]:
    if not _ANY_NOUN.search(text):
        return
    for rule, forward, backward in _COMPILED:
        for pattern in (forward, backward):
            for m in pattern.finditer(text) if pattern else ():
                group = "v" if m.start("v") >= 0 else "w"
                start, end = _unquoted(text, m.start(group), m.end(group))
                if end <= start or _digit_count(text, start, end) < rule.min_digits:
                    continue
                yield Secret(start, end, rule.kind)


_QUOTES = {'"': '"', "“": "”", "'": "'", "‘": "’", "`": "`"}


def _unquoted(text: str, start: int, end: int) -> tuple[int, int]:
    """The value without its quotes, or without the sentence's punctuation after it."""
    if end - start >= 2 and _QUOTES.get(text[start]) == text[end - 1]:
        return start + 1, end - 1
    while end > start and text[end - 1] in ".,;:!?)]}\"'’”":
        end -= 1
    return start, end


def _digit_count(text: str, start: int, end: int) -> int:
    return sum(ch.isdigit() for ch in text[start:end])
