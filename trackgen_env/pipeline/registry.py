"""``Registry``: stage names -> stage classes, the built-ins and plugins.

``build(spec, registry=reg)`` looks every stage name of the spec up in ``reg`` (the
default registry when None). A registry starts as a copy of the built-ins; a plugin adds
its stage under a namespaced name::

    reg = pipeline.Registry()
    reg.register(Banking)                       # Banking.name == "acme.banking"
    reg.register(HostStep, capturable=False)    # runs on the host: no graph can hold it
"""

from __future__ import annotations

import re

from .stage import Family, Param, Stage
from .stages import banking, circuit, gates, gates_family, given, race_gates, track, track_family

__all__ = ["Registry", "default_registry", "registry_or_default", "FAMILIES", "is_builtin"]

#: the built-in families by name
FAMILIES: dict[str, Family] = {"track": track_family.TRACK, "gates": gates_family.GATES}

_BUILTIN_STAGES = (track.Band, track.Layout, track.Spline, track.Resample, track.Checks, track.Start, banking.Banking,
                   given.CenterlineInput, gates.Layout, gates.GateFrames, gates.Start, gates.Checks,
                   given.GateLayoutInput, circuit.CircuitLayout, race_gates.RaceGatesLayout, race_gates.RaceGatesChecks)


def is_builtin(stage_cls: type) -> bool:
    """Whether ``stage_cls`` is one of the built-in stages (each writes only its pending envs' rows,
    tested in ``tests/test_generation_in_place.py``); a plugin class, even a subclass of one, is not."""
    return stage_cls in _BUILTIN_STAGES


# dotted identifiers (matched whole: fullmatch, so no trailing newline slips through)
_NAMESPACED = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)+")
_NAME_RULE = "dotted identifiers, namespace.name (e.g. 'acme.banking'), each part [a-z_][a-z0-9_]*"


class Registry:
    """Stage classes by ``(family, name)``; a stage of family None serves every family.

    ``Registry()`` holds the built-in stages; :meth:`register` adds a plugin's.
    """

    def __init__(self):
        self._stages: dict[tuple[str | None, str], tuple[type, bool]] = {
            (cls.family, cls.name): (cls, True) for cls in _BUILTIN_STAGES
        }

    def copy(self) -> "Registry":
        """A registry holding the same stages (registering into it leaves this one as it is)."""
        new = Registry.__new__(Registry)
        new._stages = dict(self._stages)
        return new

    def register(self, stage_cls: type, *, capturable: bool = True) -> type:
        """Add a stage class (usable as a decorator: returns ``stage_cls``).

        Args:
            stage_cls: a :class:`Stage` subclass whose ``name`` is namespaced (``"acme.banking"``:
                the built-ins' plain names are reserved) and whose params have unique plain names.
            capturable: False for a stage that runs on the host (reads device data back, or
                calls NumPy): a program holding it runs its regeneration eagerly, and raises
                ``NotCapturableError`` under a capture.

        Raises:
            TypeError: not a Stage subclass, or ``capturable`` not a bool; ``reads`` / ``writes`` not
                tuples of str (a bare str, a list), ``params`` not a tuple of :class:`Param`, ``draws``
                not a bool.
            ValueError: a name that is not namespaced (dotted identifiers, each part
                ``[a-z_][a-z0-9_]*``), a name (of the same family) already registered, a family
                other than ``"track"`` / ``"gates"`` / None, or two params of one name. (A
                :class:`Param` checks its own name, default and bounds when it is constructed.)
        """
        if not (isinstance(stage_cls, type) and issubclass(stage_cls, Stage)):
            raise TypeError(f"register() takes a Stage subclass, got {stage_cls!r}")
        if not isinstance(capturable, bool):
            raise TypeError(f"capturable must be a bool, got {capturable!r}")
        name, family = stage_cls.name, stage_cls.family
        if not isinstance(name, str) or not _NAMESPACED.fullmatch(name):
            raise ValueError(
                f"a plugin stage needs a namespaced name: {_NAME_RULE} (the plain names are the built-ins'); "
                f"got {name!r} ({stage_cls.__name__})"
            )
        if family is not None and family not in FAMILIES:
            raise ValueError(f"stage {name!r}: family must be one of {sorted(FAMILIES)} or None, got {family!r}")
        taken = [key for key in self._stages if key[1] == name and (family is None or key[0] in (None, family))]
        if taken:
            raise ValueError(f"stage {name!r} is already registered ({self._stages[taken[0]][0].__name__}): "
                             "a name is registered once")
        _check_declaration(stage_cls)
        names = [p.name for p in stage_cls.params]  # each an identifier (Param checks it)
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"stage {name!r}: param names must be unique, got {dupes} more than once")
        _check_ordered_pairs(name, stage_cls.ordered, names)
        self._stages[(family, name)] = (stage_cls, capturable)
        return stage_cls

    def lookup(self, name: str, family: str) -> tuple[type, bool]:
        """``(stage class, capturable)`` of ``name`` in ``family``.

        Raises:
            KeyError: no such stage (the message lists the stages of the family).
        """
        for key in ((family, name), (None, name)):
            if key in self._stages:
                return self._stages[key]
        others = sorted(f for f, n in self._stages if n == name)
        if others:
            raise KeyError(f"stage {name!r} is a stage of the {others[0]} family, not of the {family} family; the "
                           f"{family} family's stages are {self.names(family)}")
        raise KeyError(f"unknown stage {name!r} for the {family} family; the known stages are {self.names(family)} "
                       f"(a plugin stage: pass the Registry it is registered in, registry= to build, to the env or "
                       f"to Course.track / Course.gates; --plugin module:attribute to train and eval)")

    def names(self, family: str) -> list[str]:
        """The stage names a spec of ``family`` may use."""
        return sorted(n for f, n in self._stages if f in (None, family))

    def family(self, name: str) -> Family:
        """The built-in family ``name``.

        Raises:
            ValueError: an unknown family (the message lists them).
        """
        if name not in FAMILIES:
            raise ValueError(f"unknown family {name!r}; the families are {sorted(FAMILIES)}")
        return FAMILIES[name]

    def __repr__(self) -> str:
        plugins = sorted(n for (_, n) in self._stages if "." in n)
        return f"Registry(plugins={plugins})"


def _check_declaration(stage_cls: type) -> None:
    """Refuse class attributes of the wrong type, which would otherwise fail later and
    confusingly (``reads = "half_width"`` reads as the fields ``h``, ``a``, ...)."""
    name = stage_cls.name
    params = stage_cls.params
    # tuples, as documented: a class attribute shared by every instance stays immutable
    if not isinstance(params, tuple) or not all(isinstance(p, Param) for p in params):
        hint = f" (write {tuple(params)!r})" if isinstance(params, list) else ""
        raise TypeError(f"stage {name!r}: params must be a tuple of pipeline.Param, got "
                        f"{type(params).__name__} {params!r}{hint}")
    for what in ("reads", "writes"):
        value = getattr(stage_cls, what)
        if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
            hint = (f" (write ({value!r},) for one field)" if isinstance(value, str)
                    else f" (write {tuple(value)!r})" if isinstance(value, list) else "")
            raise TypeError(f"stage {name!r}: {what} must be a tuple of field names (str), got "
                            f"{type(value).__name__} {value!r}{hint}")
    if not isinstance(stage_cls.draws, bool):
        raise TypeError(f"stage {name!r}: draws must be a bool, got {stage_cls.draws!r}")


_DEFAULT = Registry()


def default_registry() -> Registry:
    """The registry ``build`` uses when given none (the built-ins, and what was registered into it)."""
    return _DEFAULT


def registry_or_default(registry) -> Registry:
    """``registry`` checked, or :func:`default_registry` for None.

    Raises:
        TypeError: anything but a :class:`Registry` instance or None (a dict, the class itself).
    """
    if registry is None:
        return _DEFAULT
    if not isinstance(registry, Registry):
        raise TypeError(f"registry must be a pipeline.Registry or None, got {type(registry).__name__} "
                        f"{registry!r}"[:200])
    return registry


def _check_ordered_pairs(stage: str, ordered, names: list[str]) -> None:
    """Refuse a stage's ``ordered`` that is not a tuple of ``(lo, hi)`` pairs of two of its params' names
    (it failed at build with a bare KeyError or an unpacking error, or not at all)."""
    expected = f"stage {stage!r}: ordered must be a tuple of (lo, hi) pairs of its params' names {names}"
    if not isinstance(ordered, tuple):
        raise TypeError(f"{expected}, got {type(ordered).__name__} {ordered!r}")
    for pair in ordered:
        if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(n, str) for n in pair)):
            raise TypeError(f"{expected}, got the entry {pair!r}")
        unknown = [n for n in pair if n not in names]
        if unknown or pair[0] == pair[1]:
            raise ValueError(f"{expected}, got {pair!r}" + (f" ({unknown} is no param of it)" if unknown else ""))
