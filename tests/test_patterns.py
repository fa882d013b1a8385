"""User patterns on RE2: the same answers as Python's re, linear time, bounded fallbacks."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
import warnings
from typing import Any

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from toolscore.matchers import Regex, Search
from toolscore.patterns import (
    PatternError,
    PatternTimeout,
    UserPattern,
    class_ranges,
    translate,
)

# -- patterns built from the pieces of Python's syntax that matter for the translation -------

LITERALS = ["a", "b", "K", "é", "_", "1", " ", "-", "\\n", "\\.", "\\x41", "\\u00e9", "\\101"]
ESCAPES = ["\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "."]
ASSERTIONS = ["\\b", "\\B", "\\A", "\\Z", "^", "$"]  # zero-width: Python repeats none
CLASSES = ["[ab]", "[^a\\d]", "[a-z]", "[\\w-]", "[\\s\\S]", "[]a]", "[^\\n]", "[é-ï]", "[\\W_]"]
QUANTIFIERS = ["", "", "", "*", "+", "?", "{2}", "{,2}", "{1,}", "*?", "+?", "{0,1}?", "{}"]


def _pattern(depth: int) -> st.SearchStrategy[str]:
    atom = st.sampled_from(LITERALS + ESCAPES + CLASSES)
    if depth > 0:
        inner = _pattern(depth - 1)
        atom = atom | inner.map(lambda p: f"({p})") | inner.map(lambda p: f"(?:{p})")
        atom = atom | st.tuples(st.sampled_from(["i", "m", "s", "-i", "x"]), inner).map(
            lambda t: f"(?{t[0]}:{t[1]})"
        )
    piece = st.tuples(atom, st.sampled_from(QUANTIFIERS)).map("".join) | st.sampled_from(ASSERTIONS)
    seq = st.lists(piece, min_size=1, max_size=4).map("".join)
    return st.lists(seq, min_size=1, max_size=2).map("|".join)


patterns = _pattern(2)
flag_sets = st.sampled_from(
    [0, re.I, re.M, re.S, re.A, re.X, re.I | re.M, re.S | re.M, re.I | re.A, re.M | re.X]
)
texts = st.text(alphabet="ab\n é_K1-.ſıİ\u212aÅ", max_size=10) | st.text(max_size=6)


def _python(pattern: str, flags: int) -> re.Pattern[str] | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return re.compile(pattern, flags)
    except re.error:
        return None


class _Slow(Exception):
    pass


def _oracle(run: Any, text: str) -> bool | None:
    """Python's answer, or None when it takes over a second (nested quantifiers on a text
    where the engine, too, had to ask Python's re)."""

    def stop(*_: object) -> None:
        raise _Slow

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        return run(text) is not None
    except _Slow:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _answer(run: Any, text: str) -> bool | None:
    try:
        return bool(run(text))
    except PatternTimeout:  # the documented outcome of a slow fallback match
        return None


@settings(max_examples=400, deadline=None)
@given(patterns, flag_sets, st.lists(texts, min_size=1, max_size=4))
@example("\\B", re.ASCII, ["0\x800"])  # RE2's \B inside one character's UTF-8 bytes
def test_answers_as_python_re(pattern: str, flags: int, samples: list[str]) -> None:
    python = _python(pattern, flags)
    assume(python is not None)
    engine = UserPattern(pattern, flags)
    assert engine.backtracking is None, pattern  # nothing here needs backtracking
    found = False
    for text in samples:
        for mine, theirs in ((engine.search, python.search), (engine.fullmatch, python.fullmatch)):
            answer = _answer(mine, text)
            if answer is None:
                assert not engine.exact(text)  # only a fallback match may time out
                continue
            expected = _oracle(theirs, text)
            if expected is not None:
                assert answer == expected, (pattern, flags, text, mine.__name__)
                found = found or (expected and mine == engine.search)
    if engine.search_joined(samples) is False:  # the joined search never hides a match
        assert not found, (pattern, samples)


@settings(max_examples=150, deadline=None)
@given(patterns, st.lists(st.text(alphabet="ab \n-_1", max_size=8), min_size=1, max_size=4))
def test_ascii_texts_run_on_re2(pattern: str, samples: list[str]) -> None:
    """On ASCII text without a trailing newline, RE2 answers (no fallback) and is right
    (unless a non-ASCII letter is under re.IGNORECASE)."""
    python = _python(pattern, 0)
    assume(python is not None)
    engine = UserPattern(pattern)
    assume(not engine.translation.casefold_wide)
    for text in samples:
        if text and not text.endswith("\n"):
            assert engine.exact(text)
            assert engine.search(text) == (python.search(text) is not None), (pattern, text)


def test_seed_and_benchmark_patterns_run_on_re2() -> None:
    for pattern in [
        r"\brm\s+-rf\b",
        r"(?i)\b(drop|truncate)\s+table\b",
        "^/etc/",
        r"^https?://169\.254\.169\.254",
        r"/\.ssh/|id_rsa",
    ]:
        engine = UserPattern(pattern)
        assert engine.backtracking is None and engine.re2 is not None
        assert engine.exact("rm -rf / && DROP TABLE x")
    assert Search(r"\brm\s+-rf\b").matches("sudo rm  -rf /")
    assert Regex(r".*rm -rf.*", re.DOTALL).matches("ls\nrm -rf /")
    assert not Regex(r".*rm -rf.*").matches("ls\nrm -rf /")
    assert Regex("(?i)WEATHER.*").matches("weather NYC")
    assert Search("rm").matches(["r", "m"]) is False and Search("r m").matches(["r", "m"])


def test_python_meanings_kept() -> None:
    # Python's $ also matches before a final newline; its \d, \w, \s are Unicode
    assert UserPattern("ls$").search("ls\n")
    assert not UserPattern(r"ls\Z").search("ls\n")
    assert UserPattern(r"^\d+$").search("١٢٣")  # Arabic-Indic digits
    assert UserPattern(r"^\w+$").search("héllo")
    assert UserPattern(r"\s").search("\x1c") and UserPattern(r"\s").search("\v")
    assert not UserPattern(r"(?a)\w").search("é")
    assert UserPattern(r"\bé").search(" é")  # a Unicode word boundary
    assert UserPattern("(?i)i").search("İ") == (re.search("(?i)i", "İ") is not None)
    assert UserPattern("a{,2}b").fullmatch("aab") and not UserPattern("a{,2}b").fullmatch("a{,2}b")
    assert UserPattern("x{}").fullmatch("x{}")
    assert UserPattern(r"\N{LATIN SMALL LETTER E WITH ACUTE}").search("é")


def test_translation_names_what_it_holds() -> None:
    read = translate(r"\Afoo")
    assert read.anchored and read.joined is None
    read = translate(r"(?m)^foo$", re.M)
    assert read.joined == read.pattern and not read.dollar
    assert translate(r"\bx").boundary and translate("(?i:x)").casefold
    assert translate(r"(a)\1").refused == (
        "a backreference is not supported (it needs backtracking; patterns run on RE2, in "
        "linear time)"
    )


@pytest.mark.parametrize(
    ("pattern", "what", "position"),
    [
        (r"(?<=a)b", "a lookbehind", 0),
        (r"x(?!a)", "a lookahead", 1),
        (r"(a)\1", "a backreference", 3),
        (r"(?P<n>a)(?P=n)", "a backreference (?P=...)", 8),
        ("a++", "a possessive quantifier", 1),
        ("(?>a)", "an atomic group", 0),
        ("(a)?(?(1)b)", "a conditional group", 4),
        ("a{2000}", "a repetition count over 1000", 1),
    ],
)
def test_backtracking_refused_when_asked(pattern: str, what: str, position: int) -> None:
    with pytest.raises(PatternError) as info:
        UserPattern(pattern, allow_backtracking=False)
    assert info.value.refused and info.value.position == position
    assert str(info.value).startswith(f"{what} is not supported")
    assert str(info.value).endswith(f"at position {position}")
    # allowed (the default): it runs on Python's re, with Python's answers
    engine = UserPattern(pattern)
    assert engine.backtracking is not None and engine.re2 is None
    for text in ["ab", "aab", "xa", "xb", "a" * 2000]:
        assert engine.search(text) == (re.search(pattern, text) is not None)


def test_invalid_pattern_is_a_re_error_with_its_position() -> None:
    with pytest.raises(re.error) as info:
        Regex("ab(")
    assert isinstance(info.value, ValueError) and isinstance(info.value, PatternError)
    assert info.value.pos == 2 and not info.value.refused
    assert str(info.value) == "missing ), unterminated subpattern at position 2"


HOSTILE = "a" * 99 + "!"


def test_catastrophic_pattern_is_linear_on_re2() -> None:
    began = time.perf_counter()
    assert not Search("(a+)+$").matches(HOSTILE)
    assert not Regex("(a+)+").matches(HOSTILE)
    assert not Search(r"(\w+\s?)+$").matches("word " * 40 + "!")
    assert time.perf_counter() - began < 0.5


def test_fallback_is_time_bounded() -> None:
    engine = UserPattern("(a+)+$")
    assert not engine.exact(HOSTILE + "\n")  # Python's $ before a final newline: re runs it
    began = time.perf_counter()
    with pytest.raises(PatternTimeout):
        engine.search(HOSTILE + "\n")
    assert time.perf_counter() - began < 0.6
    engine = UserPattern(r"(a+)+(?=!)x")  # backtracking: every match runs on re
    began = time.perf_counter()
    for _ in range(10):  # the pattern's budget runs out: later matches time out at once
        with pytest.raises(PatternTimeout):
            engine.search(HOSTILE)
    assert time.perf_counter() - began < 2.0
    # a matcher inside compare_values: a timeout is no match
    from toolscore.matchers import compare_values

    assert compare_values(Search("(a+)+(?=!)x"), HOSTILE) is False


@pytest.mark.parametrize("letter", ["d", "w", "s"])
def test_class_ranges_are_python_re_own_sets(letter: str) -> None:
    every = "".join(map(chr, range(0x110000)))
    for prefix, ascii_only in (("(?u)", False), ("(?a)", True)):
        found = re.finditer(f"{prefix}\\{letter}+", every)
        assert class_ranges(letter, ascii_only) == tuple((m.start(), m.end() - 1) for m in found)


def test_a_timer_set_before_is_kept() -> None:
    import signal

    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 5.0)
        engine = UserPattern("(a+)+$")
        with pytest.raises(PatternTimeout):
            engine.search(HOSTILE + "\n")
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 4.0 < left < 5.0  # theirs, with the time it had left
        assert signal.getsignal(signal.SIGALRM) is not None and not fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_class_table_is_python_re_own_sets() -> None:
    # the table of toolscore._classes holds what re gives on this Python (when it has it)...
    from toolscore._classes import known_ranges

    every = "".join(map(chr, range(0x110000)))
    for letter in "dsw":
        table = known_ranges(letter)
        if table is not None:
            found = re.finditer(f"(?u)\\{letter}+", every)
            assert table == tuple((m.start(), m.end() - 1) for m in found)


def test_class_ranges_without_a_table_entry_read_re() -> None:
    # ...and a Python without an entry reads the same from re (a fresh process: the sets
    # are kept once read)
    code = (
        "import re, toolscore._classes as c\n"
        "c.KEY = 'no such Python'\n"
        "from toolscore.patterns import class_ranges\n"
        "every = ''.join(map(chr, range(0x110000)))\n"
        "for letter in 'dsw':\n"
        "    found = re.finditer(f'(?u)\\\\{letter}+', every)\n"
        "    assert class_ranges(letter, False) == tuple((m.start(), m.end() - 1) for m in found)\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
