"""The vocabulary of slot values: which terms name the same thing, how a value is stored,
and whether a negation names a value. Canonicalisation of values is a write-path rule: the
extractors, the gate and the conflict judge all use this one copy.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING

from strata.write import slots
from strata.write.slots import VALUE_ALIASES, normalise_value  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    from strata.write.models import Candidate

# canonical term -> (category, aliases). Category names the slot: user.preferred_<category>.
LEXICON: dict[str, tuple[str, tuple[str, ...]]] = {
    # databases
    "postgresql": ("database", ("postgres", "postgre", "pg", "psql", "pgsql")),
    "mysql": ("database", ()),
    "mariadb": ("database", ()),
    "mongodb": ("database", ("mongo", "mongo db")),
    "sqlite": ("database", ("sqlite3",)),
    "redis": ("database", ()),
    "dynamodb": ("database", ("dynamo", "dynamo db")),
    "cassandra": ("database", ()),
    "elasticsearch": ("database", ("elastic search",)),
    "opensearch": ("database", ()),
    "neo4j": ("database", ()),
    "cockroachdb": ("database", ("cockroach db",)),
    "duckdb": ("database", ()),
    "clickhouse": ("database", ()),
    "couchdb": ("database", ()),
    "firestore": ("database", ()),
    "oracle": ("database", ("oracle db", "oracle database")),
    "sql server": ("database", ("mssql", "microsoft sql server")),
    # editors
    "vim": ("editor", ("vi",)),
    "neovim": ("editor", ("nvim",)),
    "emacs": ("editor", ()),
    "vscode": ("editor", ("vs code", "visual studio code")),
    "visual studio": ("editor", ()),
    "sublime text": ("editor", ("sublime",)),
    "intellij": ("editor", ("intellij idea",)),
    "pycharm": ("editor", ()),
    "nano": ("editor", ()),
    "helix": ("editor", ()),
    "zed": ("editor", ()),
    "xcode": ("editor", ()),
    "notepad++": ("editor", ()),
    # programming languages
    "python": ("language", ("py", "python3", "python 3")),
    "rust": ("language", ()),
    "go": ("language", ("golang",)),
    "java": ("language", ()),
    "typescript": ("language", ("ts",)),
    "javascript": ("language", ("js", "ecmascript")),
    "c": ("language", ()),
    "c++": ("language", ("cpp",)),
    "c#": ("language", ("csharp",)),
    "ruby": ("language", ()),
    "php": ("language", ()),
    "kotlin": ("language", ()),
    "swift": ("language", ()),
    "scala": ("language", ()),
    "haskell": ("language", ()),
    "elixir": ("language", ()),
    "erlang": ("language", ()),
    "clojure": ("language", ()),
    "perl": ("language", ()),
    "julia": ("language", ()),
    "lua": ("language", ()),
    "dart": ("language", ()),
    "zig": ("language", ()),
    "ocaml": ("language", ()),
    "r": ("language", ()),
    # operating systems
    "linux": ("os", ("gnu/linux",)),
    "macos": ("os", ("mac", "osx", "os x", "mac os", "mac os x", "macbook")),
    "windows": ("os", ("windows 10", "windows 11")),
    "ubuntu": ("os", ()),
    "debian": ("os", ()),
    "fedora": ("os", ()),
    "arch linux": ("os", ("arch",)),
    "nixos": ("os", ()),
    "freebsd": ("os", ()),
    "ios": ("mobile_os", ("iphone",)),
    "android": ("mobile_os", ()),
    # clouds
    "aws": ("cloud", ("amazon web services",)),
    "gcp": ("cloud", ("google cloud", "google cloud platform")),
    "azure": ("cloud", ("microsoft azure",)),
    "digitalocean": ("cloud", ("digital ocean",)),
    "heroku": ("cloud", ()),
    # browsers and shells
    "chrome": ("browser", ("google chrome",)),
    "firefox": ("browser", ()),
    "safari": ("browser", ()),
    "edge": ("browser", ("microsoft edge",)),
    "brave": ("browser", ()),
    "bash": ("shell", ()),
    "zsh": ("shell", ()),
    "powershell": ("shell", ()),
    # drinks
    "coffee": ("drink", ()),
    "tea": ("drink", ()),
    "green tea": ("drink", ()),
    "black tea": ("drink", ()),
    "espresso": ("drink", ()),
    "latte": ("drink", ()),
    "cappuccino": ("drink", ()),
    "matcha": ("drink", ()),
    "hot chocolate": ("drink", ()),
}

ALIASES: dict[str, str] = {
    alias: canonical
    for canonical, (_, aliases) in LEXICON.items()
    for alias in (canonical, *aliases)
}
CATEGORY: dict[str, str] = {canonical: category for canonical, (category, _) in LEXICON.items()}

# Terms that are also ordinary words (or letters): they count only as the whole object, so
# "I use Go" is a language but "vitamin C", "the edge case", "arch support" are not.
AMBIGUOUS = frozenset(
    "c r go pg py ts js vi mac arch edge brave swift rust java dart oracle sublime nano helix "
    "zed safari elastic dynamo ruby julia".split()
)

# Nouns that name a lexicon category: "my favourite database is X" → user.preferred_database.
CATEGORY_NOUNS = {
    "database": "database", "db": "database", "datastore": "database",
    "editor": "editor", "text editor": "editor", "code editor": "editor", "ide": "editor",
    "language": "language", "programming language": "language",
    "os": "os", "operating system": "os", "distro": "os", "linux distro": "os",
    "cloud": "cloud", "cloud provider": "cloud",
    "browser": "browser", "web browser": "browser", "shell": "shell",
    "drink": "drink", "beverage": "drink", "hot drink": "drink",
}
_NOUN_SPELLING = {"color": "colour", "flavor": "flavour", "favourite": "favorite"}

_ALIAS_RE = re.compile(
    "|".join(
        rf"(?<![\w+#/]){re.escape(a)}(?![\w+#/])" for a in sorted(ALIASES, key=len, reverse=True)
    ),
    re.I,
)
_ARTICLE = re.compile(r"^(?:a|an|the|my|our|some)\s+", re.I)
_SPACES = re.compile(r"\s+")
_EDGE = " \t\r\n.,;:!?\"'`()[]{}"


def _squash(text: str) -> str:
    return _SPACES.sub(" ", text).strip(_EDGE)


def normalize_value(text: str | None) -> str | None:
    """A slot value in its stored form: lowercase, articles dropped, an alias folded to its
    canonical term when the whole value is one ("Postgres" → "postgresql")."""
    if text is None:
        return None
    value = _squash(unicodedata.normalize("NFKC", text).lower())
    value = _ARTICLE.sub("", value)
    value = ALIASES.get(value, value)
    return value or None


@dataclass(frozen=True)
class Term:
    canonical: str
    category: str
    alias: str
    start: int
    end: int


def lexicon_terms(text: str) -> list[Term]:
    """Lexicon terms in ``text``, left to right. An ambiguous alias ("go", "c", "mac") counts
    only when it is all of ``text`` (articles aside)."""
    whole_text = _ARTICLE.sub("", _squash(text.lower()))
    terms = []
    for m in _ALIAS_RE.finditer(text):
        alias = m.group().lower()
        if alias in AMBIGUOUS and whole_text != alias:
            continue
        canonical = ALIASES[alias]
        terms.append(Term(canonical, CATEGORY[canonical], alias, m.start(), m.end()))
    return terms


def fold_aliases(text: str) -> str:
    """``text`` lowercased with every lexicon alias replaced by its canonical term."""
    return _ALIAS_RE.sub(lambda m: ALIASES[m.group().lower()], text.lower())


_NEGATION = re.compile(
    r"\b(?:no\s+longer|any\s?more|any\s+longer|not|stopped|quit|gave\s+up|given\s+up|"
    r"no\s+more|left|resigned|laid\s+off|dropped|ditched|got\s+rid\s+of|moved\s+out\s+of|"
    r"moved\s+away\s+from|moved\s+on|retired|stepped\s+down|let\s+go|fired)\b",
    re.I,
)


def _names(text: str, value: str) -> bool:
    """Whether ``text`` (aliases folded) names ``value``, in the singular or the plural."""
    target = normalize_value(value)
    if not target:
        return False
    folded = fold_aliases(text)
    return re.search(rf"(?<![\w+#]){re.escape(target)}(?:s|es)?(?![\w+#])", folded) is not None


def negates(candidate: Candidate, value: str | None) -> bool:
    """Whether ``candidate`` is a negation (slot set, value None) of ``value``: the value,
    aliases folded, is named in the candidate's content, or the candidate's slot key is that
    value's key (``user.allergies:peanut``). A judge should let a negation supersede only
    the slot holder it names — "I no longer use MongoDB" retires MongoDB and leaves an
    active PostgreSQL alone; "I'm no longer allergic to peanuts" retires peanuts and leaves
    shellfish."""
    if candidate.value is not None or not candidate.slot or not value:
        return False
    if not _NEGATION.search(candidate.content):
        return False
    keyed = slots.parse(candidate.slot)[2]
    if keyed is not None:
        return keyed == slots.value_part(value)
    return _names(candidate.content, value)


def derive_value(slot: str | None, content: str, given: str | None = None,
                 previous: str | None = None) -> str | None:
    """The value a slotted memory holds: the one given; else the one its key names
    (``user.allergies:peanut`` → ``peanut``); else the one lexicon term of the slot's
    category its content names ("Bob prefers Emacs" → ``emacs`` for
    ``user.preferred_editor``, in any context); else the previous value while the content
    still names it; else the content itself, normalised. Every write path entry point
    derives it here, so an edit of the content cannot leave a stale value behind."""
    if not slot:
        return None
    if given:
        return normalise_value(given)
    family, _, keyed = slots.parse(slot)
    if keyed is not None:
        return normalise_value(keyed.replace("_", " "))
    category = family.removeprefix("user.preferred_") if family.startswith("user.preferred_") else None
    if category in set(CATEGORY.values()):
        named = {t.canonical for t in lexicon_terms(content) if t.category == category}
        if len(named) == 1:
            return named.pop()
    if previous:
        folded = fold_aliases(content)
        target = normalize_value(previous)
        if target and re.search(rf"(?<![\w+#]){re.escape(target)}(?![\w+#])", folded):
            return normalise_value(previous)
    return normalise_value(content)
