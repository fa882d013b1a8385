"""Exact sums of floats that merge: any split of the values into parts gives the same bits.

A float sum in one pass depends on the order of the additions, so a trace read in two parts
(two processes, or a dataset's traces added up) would give other last digits than the trace
read in one. :class:`ExactSum` keeps the sum exactly, as an integer times a power of two (every
float is one), so adding parts is integer addition: associative and commutative, and the float
it shows (:meth:`ExactSum.value`) is the exact sum correctly rounded, whatever the parts.

Cost: a batch of values costs a few passes in C (``map`` over ``frexp``/``ldexp``/``int``) and
one integer sum; no Python work per value, except for a batch whose values span more than
the float exponent range (a subnormal next to a huge value), added one by one as fractions.
Integers (JSON ``5``) are added exactly as integers, and a sum of integers alone stays an
integer, as ``sum`` gives; infinities and NaN are added as ``sum`` would (``inf + -inf`` is
NaN), apart from the finite values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["SUM_CHUNK", "ExactAdder", "ExactSum"]

_FLOAT = {float}


def _canonical(numerator: int, exponent: int) -> tuple[int, int]:
    """``numerator * 2**exponent`` with an odd numerator (or 0, 0)."""
    if not numerator:
        return 0, 0
    zeros = (numerator & -numerator).bit_length() - 1
    return numerator >> zeros, exponent + zeros


@dataclass(frozen=True, slots=True)
class ExactSum:
    """An exact sum of numbers: ``numerator * 2**exponent`` for the floats, ``integers`` for
    the ints, ``special`` for infinities and NaN (their ``sum``), ``floats`` whether any float
    was added (then :meth:`value` is a float, else an int)."""

    numerator: int = 0
    exponent: int = 0
    integers: int = 0
    special: float | None = None
    floats: bool = False

    @staticmethod
    def of(values: list[float]) -> ExactSum:
        """The exact sum of ``values`` (ints and floats)."""
        if not values:
            return _ZERO
        kinds = set(map(type, values))
        if kinds == _FLOAT:
            return _of_floats(values, 0)
        floats = [float(v) for v in values if v.__class__ is not int]
        integers = sum(v for v in values if v.__class__ is int)
        if not floats:
            return ExactSum(0, 0, integers)
        return _of_floats(floats, integers)

    @staticmethod
    def of_float(value: float) -> ExactSum:
        """One finite float, exactly."""
        n, d = value.as_integer_ratio()
        numerator, exponent = _canonical(n, 1 - d.bit_length())
        return ExactSum(numerator, exponent, 0, None, True)

    def __add__(self, other: ExactSum) -> ExactSum:
        a, ea = self.numerator, self.exponent
        b, eb = other.numerator, other.exponent
        if not a:
            numerator, exponent = b, eb
        elif not b:
            numerator, exponent = a, ea
        elif ea <= eb:
            numerator, exponent = _canonical(a + (b << (eb - ea)), ea)
        else:
            numerator, exponent = _canonical((a << (ea - eb)) + b, eb)
        special = self.special
        if other.special is not None:
            special = other.special if special is None else special + other.special
        return ExactSum(
            numerator,
            exponent,
            self.integers + other.integers,
            special,
            self.floats or other.floats,
        )

    def value(self) -> float:
        """The sum: an int when only ints were added, else the exact sum correctly rounded
        to a float (``inf``/NaN when one was added)."""
        if not self.floats:
            return self.integers
        if self.special is not None:
            return self.special + 0.0
        n, e = self.numerator, self.exponent
        if self.integers:
            if e >= 0:
                n, e = (n << e) + self.integers, 0
            else:
                n += self.integers << -e
        try:
            if e >= 0:
                return float(n << e)
            return n / (1 << -e)  # int division is correctly rounded
        except OverflowError:  # beyond the largest float, as a float sum gives
            return math.inf if n > 0 else -math.inf


_ZERO = ExactSum()

SUM_CHUNK = 1024
"""Values an :class:`ExactAdder` holds before it takes them into its exact sum (references to
1,024 numbers, some 32 KB with the floats kept alive)."""


class ExactAdder:
    """An exact running sum of numbers given one or a batch at a time: they wait in a list and
    are taken into an :class:`ExactSum` :data:`SUM_CHUNK` at a time (the same sum, since it is
    exact), so that its fixed cost is not paid per value. Adders merge in any order."""

    __slots__ = ("_pending", "_total")

    def __init__(self) -> None:
        self._pending: list[float] = []
        self._total = _ZERO

    def add(self, value: float) -> None:
        pending = self._pending
        pending.append(value)
        if len(pending) >= SUM_CHUNK:
            self.total()

    def extend(self, values: list[float]) -> None:
        pending = self._pending
        pending += values
        if len(pending) >= SUM_CHUNK:
            self.total()

    def merge(self, other: ExactAdder) -> None:
        """Add ``other``'s sum in."""
        self._total = self.total() + other.total()

    def total(self) -> ExactSum:
        """The exact sum of every number added."""
        if self._pending:
            self._total = self._total + ExactSum.of(self._pending)
            self._pending = []
        return self._total

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExactAdder) and self.total() == other.total()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ExactAdder({self.total()!r})"


def _of_floats(floats: list[float], integers: int) -> ExactSum:
    """The floats' exact sum by ``math.fsum`` (exact inside, correctly rounded out): the
    rounded sum, then the rounded rest, and so on until nothing is left (one or two rounds
    for durations), each a pass in C; then the integers."""
    try:
        total = math.fsum(floats)
        if math.isfinite(total):
            acc = ExactSum.of_float(total)
            work = list(floats)
            while total:
                work.append(-total)
                total = math.fsum(work)
                if total:
                    acc = acc + ExactSum.of_float(total)
            return acc + ExactSum(0, 0, integers) if integers else acc
    except (OverflowError, ValueError):  # beyond the float range; inf + -inf
        pass
    return _slow(floats, integers)


def _slow(floats: list[float], integers: int) -> ExactSum:
    """Infinities and NaN apart, the finite values as fractions, one by one."""
    from fractions import Fraction  # rare: not loaded at every start

    finite = [v for v in floats if math.isfinite(v)]
    special: float | None = None
    if len(finite) != len(floats):
        special = sum(v for v in floats if not math.isfinite(v))
    total = sum(map(Fraction, finite), Fraction(0))
    exponent = 1 - total.denominator.bit_length()
    numerator, exponent = _canonical(total.numerator, exponent)
    return ExactSum(numerator, exponent, integers, special, True)
