"""A small query language: column references, comparisons, and/or/not, and the aggregates.

    q = where((col("age") <= col("height")) & (col("w") != col("h"))).sum("income")

Every node is a frozen, hashable dataclass: a query is a static key for the compiled program.
Python's ``and``/``or``/``not`` cannot be overloaded, so predicates combine with ``&``, ``|``
and ``~`` (mind the parentheses: ``&`` binds tighter than ``<=``).
"""
from __future__ import annotations

import dataclasses

__all__ = ["And", "Cmp", "Col", "Not", "Or", "Query", "Where", "col", "where"]

_OPS = ("<=", "<", ">=", ">", "==", "!=")
_FLIP = {"<=": ">=", "<": ">", ">=": "<=", ">": "<", "==": "==", "!=": "!="}


class _Pred:
    """Mixin: ``&``, ``|``, ``~`` on predicates."""

    def __and__(self, other):
        return And(self, _check_pred(other, "&"))

    def __or__(self, other):
        return Or(self, _check_pred(other, "|"))

    def __invert__(self):
        return Not(self)

    def __bool__(self):
        raise TypeError("a PDQ predicate has no truth value: combine predicates with &, |, ~ "
                        "(not 'and', 'or', 'not'), and parenthesize comparisons")


def _check_pred(p, what):
    if not isinstance(p, _Pred):
        raise TypeError(f"{what}: expected a predicate (a comparison of columns), got {type(p).__name__}")
    return p


def _operand(x, what):
    if isinstance(x, Col):
        return x.name
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"{what}: compare a column with a column or an int constant, got {type(x).__name__}")
    return int(x)


@dataclasses.dataclass(frozen=True, eq=False)
class Col:
    """A column reference; comparisons with a column or an int constant make a :class:`Cmp`."""

    name: str

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"col: a column name must be a non-empty str, got {self.name!r}")

    def _cmp(self, op, other):
        return Cmp(op, self.name, _operand(other, f"col({self.name!r}) {op}"))

    def __le__(self, o):
        return self._cmp("<=", o)

    def __lt__(self, o):
        return self._cmp("<", o)

    def __ge__(self, o):
        return self._cmp(">=", o)

    def __gt__(self, o):
        return self._cmp(">", o)

    def __eq__(self, o):  # noqa: D105  (builds a predicate)
        return self._cmp("==", o)

    def __ne__(self, o):
        return self._cmp("!=", o)

    def __hash__(self):
        return hash(("col", self.name))


def col(name: str) -> Col:
    """A reference to the column ``name`` of the encrypted table."""
    return Col(name)


@dataclasses.dataclass(frozen=True)
class Cmp(_Pred):
    """``left op right``: left a column name, right a column name or an int constant."""

    op: str
    left: str
    right: object

    def __post_init__(self):
        if self.op not in _OPS:
            raise ValueError(f"Cmp: unknown operator {self.op!r}; one of {_OPS}")

    def columns(self) -> set:
        """Column names this predicate reads."""
        return {self.left} | ({self.right} if isinstance(self.right, str) else set())

    def depth(self, bits_log: int) -> int:
        """Levels this comparison consumes: one for the per-bit leaves (a product of the two
        columns, or of the column and the constant's bit pattern) and one per combining step."""
        return bits_log + 1


@dataclasses.dataclass(frozen=True)
class And(_Pred):
    """Both predicates (one product)."""

    a: _Pred
    b: _Pred

    def columns(self) -> set:
        """Column names this predicate reads."""
        return self.a.columns() | self.b.columns()

    def depth(self, bits_log: int) -> int:
        """Levels this predicate consumes."""
        return 1 + max(self.a.depth(bits_log), self.b.depth(bits_log))


@dataclasses.dataclass(frozen=True)
class Or(And):
    """Either predicate: a + b - a b (one product)."""


@dataclasses.dataclass(frozen=True)
class Not(_Pred):
    """1 - the predicate (no level)."""

    a: _Pred

    def columns(self) -> set:
        """Column names this predicate reads."""
        return self.a.columns()

    def depth(self, bits_log: int) -> int:
        """Levels this predicate consumes."""
        return self.a.depth(bits_log)


_KINDS = ("index", "count", "sum", "avg", "ratio")


@dataclasses.dataclass(frozen=True)
class Query:
    """One query: ``kind`` in index/count/sum/avg/ratio, the filter (None: every row), the
    aggregated columns (sum/avg: (c,); ratio: (a, b) for a / b^2), and for ratio the inverse
    method ("interactive": the two-party blinded inverse; "newton": non-interactive, with
    ``den_range`` = (lo, hi) bounding b^2)."""

    kind: str
    pred: object = None
    cols: tuple = ()
    inverse: str = "interactive"
    den_range: tuple = ()

    def __post_init__(self):
        if self.kind not in _KINDS:
            raise ValueError(f"Query: unknown kind {self.kind!r}; one of {_KINDS}")
        if self.pred is not None:
            _check_pred(self.pred, "where")
        want = {"index": 0, "count": 0, "sum": 1, "avg": 1, "ratio": 2}[self.kind]
        if len(self.cols) != want or not all(isinstance(c, str) and c for c in self.cols):
            raise ValueError(f"Query {self.kind}: expected {want} column name(s), got {self.cols!r}")
        if self.inverse not in ("interactive", "newton"):
            raise ValueError(f"Query: inverse must be 'interactive' or 'newton', got {self.inverse!r}")
        if self.inverse == "newton":
            if self.kind != "ratio" or len(self.den_range) != 2 or not 0 < self.den_range[0] <= self.den_range[1]:
                raise ValueError("Query: inverse='newton' applies to ratio queries and needs "
                                 "den_range=(lo, hi) with 0 < lo <= hi bounding b^2")

    def columns(self) -> set:
        """Every column name the query reads."""
        return (self.pred.columns() if self.pred is not None else set()) | set(self.cols)

    @property
    def interactive(self) -> bool:
        """Whether the query needs the data holder's inverse round trip."""
        return self.kind == "avg" or (self.kind == "ratio" and self.inverse == "interactive")

    def __str__(self) -> str:
        what = {"index": "Index()", "count": "Count()"}.get(self.kind)
        if what is None:
            what = (f"{self.cols[0]} / {self.cols[1]}^2" if self.kind == "ratio"
                    else f"{self.kind.capitalize()}({self.cols[0]})")
        return what + ("" if self.pred is None else f" where {_fmt(self.pred)}")


def _fmt(p) -> str:
    if isinstance(p, Cmp):
        return f"{p.left} {p.op} {p.right}"
    if isinstance(p, Not):
        return f"not ({_fmt(p.a)})"
    return f"({_fmt(p.a)} {'or' if isinstance(p, Or) else 'and'} {_fmt(p.b)})"


@dataclasses.dataclass(frozen=True)
class Where:
    """A filter waiting for its aggregate: ``.index()``, ``.count()``, ``.sum(c)``, ``.avg(c)``,
    ``.ratio(a, b)``."""

    pred: object = None

    def index(self) -> Query:
        """Which rows pass (an encrypted 0/1 mask)."""
        return Query("index", self.pred)

    def count(self) -> Query:
        """How many rows pass (exact)."""
        return Query("count", self.pred)

    def sum(self, c: str) -> Query:
        """Sum of column c over the rows that pass (exact)."""
        return Query("sum", self.pred, (c,))

    def avg(self, c: str) -> Query:
        """Average of column c over the rows that pass (two-party inverse of the count)."""
        return Query("avg", self.pred, (c,))

    def ratio(self, a: str, b: str, *, inverse: str = "interactive", den_range: tuple = ()) -> Query:
        """Per row a / b^2 (CAT's BMI-like query) for the rows that pass."""
        return Query("ratio", self.pred, (a, b), inverse, tuple(float(x) for x in den_range))


def where(pred=None) -> Where:
    """Start a query with a filter (None: every row)."""
    if pred is not None:
        _check_pred(pred, "where")
    return Where(pred)
