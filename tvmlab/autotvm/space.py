"""The configuration space of a template: knobs, their entities, and configs.

A template declares knobs on ``cfg`` (``define_split``, ``define_reorder``,
``define_annotate``, ``define_knob``); each knob is a space of entities
(``SplitEntity([-1, 8])``, ``ReorderEntity([0, 2, 1])``, ...) that ``.apply``
to a schedule.  A ``ConfigSpace`` is the product of its knobs, indexed in
mixed radix (the first knob varies fastest, as in TVM); a ``ConfigEntity``
is one point of it and serialises to TVM's record JSON.  When no tuned config
is known, a ``FallbackConfigEntity`` gives each knob its first entity unless
the template sets a better default (``cfg["tile_y"] = SplitEntity([-1, 8])``).
"""
from __future__ import annotations

import itertools
import math
from collections import OrderedDict

from ..errors import TVMLabError


class ConfigError(TVMLabError, ValueError):
    """A knob was declared or used wrongly (bad policy, unknown knob, wrong entity)."""


def _extent(axis):
    """A constant loop extent from an int, a VirtualAxis or an IterVar."""
    from ..ir.expr import IntImm
    if isinstance(axis, VirtualAxis):
        return axis.length
    if isinstance(axis, bool):
        raise ConfigError(f"an axis must be an IterVar or an int extent, got {axis!r}")
    if isinstance(axis, int):
        return axis
    dom = getattr(axis, "dom", None)
    ext = getattr(dom, "extent", None)
    if isinstance(ext, IntImm):
        return ext.value
    if isinstance(ext, int):
        return ext
    raise ConfigError(f"a knob needs an axis of constant extent (an op's axis, or an int); got {axis!r}")


class VirtualAxis:
    """An axis of the space: a length (``cfg.axis(y)`` / ``cfg.reduce_axis(k)``)."""

    def __init__(self, var, name=None):
        self.length = _extent(var)
        self.name = name or getattr(getattr(var, "var", None), "name", None) or f"axis{self.length}"

    def __repr__(self):
        return f"VirtualAxis({self.name}, {self.length})"


def get_factors(n):
    """The divisors of ``n``, ascending."""
    small = [d for d in range(1, int(math.isqrt(n)) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def get_pow2s(n):
    """Powers of two up to ``n``."""
    return [2 ** k for k in range(int(math.log2(n)) + 1)] if n >= 1 else [1]


# ------------------------------------------------------------------ entities


class _Entity:
    """A knob's value: compares, hashes, prints and serialises as its data (``_data()``)."""

    def _data(self):
        raise NotImplementedError

    def to_json(self):
        d = self._data()
        return list(d) if isinstance(d, list) else d

    def __eq__(self, other):
        return type(other) is type(self) and self._data() == other._data()

    def __hash__(self):
        d = self._data()
        return hash(tuple(d) if isinstance(d, list) else repr(d))

    def __repr__(self):
        d = self._data()
        return str(d) if isinstance(d, list) else repr(d)


class SplitEntity(_Entity):
    """Split factors outermost first; the first is -1 (whatever is left)."""

    def __init__(self, size):
        self.size = [int(x) for x in size]

    def _data(self):
        return self.size

    def apply(self, sch, op, axis):
        """Split ``axis`` of ``op``'s stage; the axes, outermost first."""
        stage = sch[op]
        inners = []
        for factor in self.size[:0:-1]:
            axis, inner = stage.split(axis, factor=factor)
            inners.append(inner)
        return [axis] + inners[::-1]


class ReorderEntity(_Entity):
    """A permutation of the axes given to ``apply``."""

    def __init__(self, perm):
        self.perm = [int(x) for x in perm]

    def _data(self):
        return self.perm

    def apply(self, sch, op, axes):
        if len(axes) != len(self.perm):
            raise ConfigError(f"reorder entity {self.perm} needs {len(self.perm)} axes, got {len(axes)}")
        new = [axes[i] for i in self.perm]
        sch[op].reorder(*new)
        return new


class AnnotateEntity(_Entity):
    """One annotation per axis: "none", "unroll", "vec" or "parallel"."""

    def __init__(self, anns):
        self.anns = [str(a) for a in anns]

    def _data(self):
        return self.anns

    def apply(self, sch, op, axes, axis_lens=None, max_unroll=None, vec_size=None, cfg=None, source=None):
        """Annotate ``axes``; ``max_unroll`` skips unrolling longer axes, ``vec_size`` (an int or a
        list) skips vectorising axes of other lengths (both need ``axis_lens``)."""
        if len(axes) != len(self.anns):
            raise ConfigError(f"annotate entity {self.anns} needs {len(self.anns)} axes, got {len(axes)}")
        stage = sch[op]
        sizes = [vec_size] if isinstance(vec_size, int) else vec_size
        for k, (ax, ann) in enumerate(zip(axes, self.anns)):
            n = axis_lens[k] if axis_lens is not None else None
            if ann == "unroll":
                if max_unroll is None or n is None or n <= max_unroll:
                    stage.unroll(ax)
            elif ann == "vec":
                if sizes is None or n is None or n in sizes:
                    stage.vectorize(ax)
            elif ann == "parallel":
                stage.parallel(ax)
            elif ann != "none":
                raise ConfigError(f"unknown annotation {ann!r}; expected none, unroll, vec or parallel")
        return list(axes)


class OtherOptionEntity(_Entity):
    """The value of a ``define_knob`` knob (``cfg["name"].val``)."""

    def __init__(self, val):
        self.val = val

    def _data(self):
        return self.val


# -------------------------------------------------------------------- spaces


class TransformSpace:
    """The entities one knob may take."""
    kind = ""

    def __init__(self):
        self.entities = []

    def __len__(self):
        return len(self.entities)

    def __getitem__(self, i):
        return self.entities[i]

    def index(self, entity):
        try:
            return self.entities.index(entity)
        except ValueError:
            return None


class SplitSpace(TransformSpace):
    """Factorisations of an axis into ``num_outputs`` loops (TVM's policies).

    "factors": inner factors whose product divides the extent; "power2":
    powers of two whose product is at most the extent; "verbose": both;
    "candidate": the splits listed in ``candidate`` (``[[-1, 4, 8], ...]``;
    their products may exceed the extent, the loops then being guarded);
    ``max_factor`` bounds every inner factor.
    """
    kind = "sp"

    def __init__(self, axis, policy="factors", num_outputs=2, max_factor=None, filter=None, candidate=None):
        super().__init__()
        self.product = _extent(axis)
        if self.product < 1:
            raise ConfigError(f"define_split: the axis has extent {self.product}; expected >= 1")
        if policy not in ("factors", "power2", "verbose", "candidate"):
            raise ConfigError(f"define_split: policy must be 'factors', 'power2', 'verbose' or 'candidate', "
                              f"got {policy!r}")
        if not isinstance(num_outputs, int) or num_outputs < 1:
            raise ConfigError(f"define_split: num_outputs must be an int >= 1, got {num_outputs!r}")
        self.policy, self.num_output = policy, num_outputs
        if policy == "candidate":
            self._candidates(candidate, num_outputs, filter)
            return
        if candidate is not None:
            raise ConfigError("define_split: candidate= goes with policy='candidate'")
        n = self.product
        max_factor = n if max_factor is None else max_factor
        if policy == "factors":
            cands = get_factors(n)
        elif policy == "power2":
            cands = get_pow2s(n)
        else:
            cands = sorted(set(get_factors(n)) | set(get_pow2s(n)))
        cands = [c for c in cands if c <= max_factor]
        seen = set()
        for inner in itertools.product(cands, repeat=num_outputs - 1):
            prod = math.prod(inner)
            if prod > n:
                continue
            if policy == "factors" and n % prod:
                continue
            if policy == "verbose" and n % prod and not all(c & (c - 1) == 0 for c in inner):
                continue
            size = (-1,) + inner[::-1]
            if size in seen:
                continue
            seen.add(size)
            e = SplitEntity(size)
            if filter is None or filter(e):
                self.entities.append(e)
        if not self.entities:
            raise ConfigError(f"define_split: no split of extent {n} passes the filter")

    def _candidates(self, candidate, num_outputs, filter):
        if not candidate:
            raise ConfigError("define_split(policy='candidate') needs candidate=[[-1, f1, ...], ...]")
        seen = set()
        for c in candidate:
            if not isinstance(c, (list, tuple)) or len(c) != num_outputs or \
                    not all(isinstance(x, int) and not isinstance(x, bool) for x in c) or min(c[1:], default=1) < 1:
                raise ConfigError(f"define_split: a candidate must be {num_outputs} ints, the inner ones >= 1, "
                                  f"got {c!r}")
            size = (-1,) + tuple(c[1:])
            if size not in seen:
                seen.add(size)
                e = SplitEntity(size)
                if filter is None or filter(e):
                    self.entities.append(e)
        if not self.entities:
            raise ConfigError(f"define_split: no candidate split of extent {self.product} passes the filter")

    def __repr__(self):
        return f"Split(policy={self.policy}, product={self.product}, num_outputs={self.num_output})"


class ReorderSpace(TransformSpace):
    """Permutations of axes: "all", "identity", or "candidate" orders given as axis lists."""
    kind = "re"

    def __init__(self, axes, policy="all", candidate=None):
        super().__init__()
        n = len(axes)
        self.policy, self.num_output = policy, n
        if policy == "all":
            perms = itertools.permutations(range(n))
        elif policy == "identity":
            perms = [tuple(range(n))]
        elif policy == "candidate":
            if not candidate:
                raise ConfigError("define_reorder(policy='candidate') needs candidate=[[axes...], ...]")
            perms = []
            for order in candidate:
                try:
                    perms.append(tuple(_position(axes, a) for a in order))
                except ValueError:
                    raise ConfigError(f"define_reorder: a candidate order names an axis not in {axes}") from None
                if sorted(perms[-1]) != list(range(n)):
                    raise ConfigError(f"define_reorder: candidate {order} is not a permutation of the axes")
        else:
            raise ConfigError(f"define_reorder: policy must be 'all', 'identity' or 'candidate', got {policy!r}")
        self.entities = [ReorderEntity(p) for p in perms]

    def __repr__(self):
        return f"Reorder(policy={self.policy})"


def _position(axes, a):
    for k, x in enumerate(axes):
        if x is a:
            return k
    raise ValueError(a)


class AnnotateSpace(TransformSpace):
    """Annotations of axes: "try_unroll", "try_vec", "try_unroll_vec", or a list per axis."""
    kind = "an"

    def __init__(self, axes, policy):
        super().__init__()
        n = len(axes)
        self.policy, self.num_output = policy, n
        if policy == "try_unroll":
            choices = [["none", "unroll"]] * n
        elif policy == "try_vec":
            choices = [["none"]] * (n - 1) + [["none", "vec"]]
        elif policy == "try_unroll_vec":
            choices = [["none", "unroll"]] * (n - 1) + [["none", "unroll", "vec"]]
        elif policy == "try_parallel":
            choices = [["none", "parallel"]] + [["none"]] * (n - 1)
        else:
            raise ConfigError(f"define_annotate: policy must be 'try_unroll', 'try_vec', 'try_unroll_vec' or "
                              f"'try_parallel', got {policy!r}")
        self.entities = [AnnotateEntity(c) for c in itertools.product(*choices)] if n else [AnnotateEntity([])]

    def __repr__(self):
        return f"Annotate(policy={self.policy})"


class OtherOptionSpace(TransformSpace):
    """The candidate values of ``define_knob``."""
    kind = "ot"

    def __init__(self, candidate):
        super().__init__()
        if not isinstance(candidate, (list, tuple)) or not candidate:
            raise ConfigError(f"define_knob needs a non-empty list of candidates, got {candidate!r}")
        for c in candidate:
            if not isinstance(c, (int, float, str, bool)) and c is not None:
                raise ConfigError(f"define_knob: candidates must be numbers, strings, bools or None "
                                  f"(they are stored as JSON), got {c!r}")
        self.entities = [OtherOptionEntity(c) for c in candidate]

    def __repr__(self):
        return f"OtherOption({[e.val for e in self.entities]})"


_ENTITY_OF_KIND = {"sp": SplitEntity, "re": ReorderEntity, "an": AnnotateEntity, "ot": OtherOptionEntity}


# ------------------------------------------------------------------- configs


class ConfigSpace:
    """The product of a template's knobs; a template run on it declares them.

    ``len(space)``, ``space.get(index)`` (a ConfigEntity), ``point2knob`` /
    ``knob2point`` between an index and one entity index per knob.
    """
    is_fallback = False

    def __init__(self):
        self.space_map = OrderedDict()
        self._entity_map = OrderedDict()
        self._collect = True
        self.flop = 0
        self.code_hash = None
        self.errors = []

    # -- declaring knobs
    def _add(self, name, space):
        if not isinstance(name, str) or not name:
            raise ConfigError(f"a knob needs a non-empty string name, got {name!r}")
        if self._collect:
            if name in self.space_map and repr(self.space_map[name]) != repr(space):
                raise ConfigError(f"knob {name!r} is defined twice, differently: {self.space_map[name]} "
                                  f"and {space}")
            if name not in self.space_map:
                self.space_map[name] = space
                self._entity_map[name] = space[0]

    def define_split(self, name, axis, policy="factors", num_outputs=2, max_factor=None, filter=None,
                     candidate=None, **kwargs):
        """Knob: split ``axis`` into ``num_outputs`` loops (see SplitSpace)."""
        if kwargs:
            raise ConfigError(f"define_split: unsupported options {sorted(kwargs)}")
        self._add(name, SplitSpace(axis, policy, num_outputs, max_factor, filter, candidate))

    def define_reorder(self, name, axes, policy="all", candidate=None):
        """Knob: the order of ``axes``."""
        self._add(name, ReorderSpace(list(axes), policy, candidate))

    def define_annotate(self, name, axes, policy):
        """Knob: unroll / vectorize / parallel annotations of ``axes``."""
        self._add(name, AnnotateSpace(list(axes), policy))

    def define_knob(self, name, candidate):
        """Knob: one of ``candidate`` values (``cfg[name].val``)."""
        self._add(name, OtherOptionSpace(candidate))

    def axis(self, var):
        return VirtualAxis(var)

    reduce_axis = axis

    def add_flop(self, flop):
        """Count ``flop`` floating-point operations for this config (GFLOP/s in the tuner's log)."""
        if isinstance(flop, bool) or not isinstance(flop, (int, float)) or flop < 0:
            raise ConfigError(f"add_flop needs a number >= 0, got {flop!r}")
        self.flop += flop

    def raise_error(self, msg):
        """Mark this config invalid (the measurement records an instantiation error)."""
        raise ConfigError(msg)

    def valid(self):
        return not self.errors

    # -- reading knobs
    def __getitem__(self, name):
        try:
            return self._entity_map[name]
        except KeyError:
            raise ConfigError(f"no knob named {name!r}; defined: {list(self._entity_map)}") from None

    def get(self, index):
        """The ConfigEntity at ``index`` (0 <= index < len(space))."""
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(self):
            raise ConfigError(f"config index must be an int in [0, {len(self)}), got {index!r}")
        entities = OrderedDict()
        t = index
        for name, space in self.space_map.items():
            entities[name] = space[t % len(space)]
            t //= len(space)
        return ConfigEntity(index, self.code_hash, entities, self)

    def point2knob(self, point):
        knob = []
        for space in self.space_map.values():
            knob.append(point % len(space))
            point //= len(space)
        return knob

    def knob2point(self, knob):
        point, radix = 0, 1
        for k, space in zip(knob, self.space_map.values()):
            point += k * radix
            radix *= len(space)
        return point

    def dims(self):
        return [len(s) for s in self.space_map.values()]

    def index_of(self, entity_map):
        """The index of a config given as {knob: entity}, or None when an entity is not in the space."""
        knob = []
        for name, space in self.space_map.items():
            if name not in entity_map:
                return None
            k = space.index(entity_map[name])
            if k is None:
                return None
            knob.append(k)
        return self.knob2point(knob)

    def __len__(self):
        return math.prod(len(s) for s in self.space_map.values())

    @property
    def range_length(self):
        return len(self)

    def __iter__(self):
        return (self.get(i) for i in range(len(self)))

    def __repr__(self):
        lines = [f"ConfigSpace (len={len(self)}, range_length={len(self)}, space_map="]
        for k, (name, space) in enumerate(self.space_map.items()):
            lines.append(f"  {k:>2} {name}: {space!r} len={len(space)}")
        return "\n".join(lines) + "\n)"

    __str__ = __repr__


class ConfigEntity(ConfigSpace):
    """One point of a space: ``cfg[name]`` is that knob's entity; defining knobs again is a no-op."""

    def __init__(self, index, code_hash, entity_map, space=None):
        super().__init__()
        self.index = index
        self.code_hash = code_hash
        self._entity_map = OrderedDict(entity_map)
        self._collect = False
        if space is not None:
            self.space_map = space.space_map

    def _add(self, name, space):
        if name not in self._entity_map:
            raise ConfigError(f"this config has no knob {name!r} (it was made for another template); "
                              f"it has {list(self._entity_map)}")

    def define_split(self, name, *args, **kwargs):
        self._add(name, None)

    def define_reorder(self, name, *args, **kwargs):
        self._add(name, None)

    def define_annotate(self, name, *args, **kwargs):
        self._add(name, None)

    def define_knob(self, name, *args, **kwargs):
        self._add(name, None)

    def get_flatten_feature(self):
        """The knobs as numbers: split factors (log2), permutations, annotation codes, option values."""
        feats = []
        codes = {"none": 0.0, "unroll": 1.0, "vec": 2.0, "parallel": 3.0}
        for name, e in self._entity_map.items():
            if isinstance(e, SplitEntity):
                feats += [math.log2(x) if x > 0 else 0.0 for x in e.size[1:]]
            elif isinstance(e, ReorderEntity):
                feats += [float(x) for x in e.perm]
            elif isinstance(e, AnnotateEntity):
                feats += [codes.get(a, 4.0) for a in e.anns]
            else:
                v = e.val
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    feats.append(float(v))
                else:
                    space = self.space_map.get(name)
                    k = space.index(e) if space is not None else None
                    feats.append(float(k if k is not None else hash(repr(v)) % 97))
        return feats

    def get_other_option(self):
        return {k: e.val for k, e in self._entity_map.items() if isinstance(e, OtherOptionEntity)}

    def to_json_dict(self):
        return {"index": int(self.index), "code_hash": self.code_hash,
                "entity": [[name, _kind(e), e.to_json()] for name, e in self._entity_map.items()]}

    @staticmethod
    def from_json_dict(json_dict):
        """A ConfigEntity from TVM's record JSON; ConfigError when it is malformed."""
        if not isinstance(json_dict, dict) or "entity" not in json_dict:
            raise ConfigError(f"a config must be a dict with 'index' and 'entity', got {json_dict!r:.80}")
        index = json_dict.get("index", -1)
        if isinstance(index, bool) or not isinstance(index, int):
            raise ConfigError(f"config index must be an int, got {index!r}")
        entities = OrderedDict()
        for item in json_dict["entity"]:
            if not isinstance(item, list) or len(item) != 3 or not isinstance(item[0], str):
                raise ConfigError(f"a config entity must be [name, kind, value], got {item!r:.80}")
            name, kind, value = item
            if kind not in _ENTITY_OF_KIND:
                raise ConfigError(f"unknown knob kind {kind!r} for {name!r}; expected sp, re, an or ot")
            if kind in ("sp", "re"):
                if not isinstance(value, list) or not all(isinstance(x, int) and not isinstance(x, bool)
                                                          for x in value):
                    raise ConfigError(f"knob {name!r} ({kind}) needs a list of ints, got {value!r:.80}")
            elif kind == "an":
                if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
                    raise ConfigError(f"knob {name!r} (an) needs a list of strings, got {value!r:.80}")
            elif not isinstance(value, (int, float, str, bool)) and value is not None:
                raise ConfigError(f"knob {name!r} (ot) needs a number or string, got {value!r:.80}")
            entities[name] = _ENTITY_OF_KIND[kind](value)
        code_hash = json_dict.get("code_hash")
        return ConfigEntity(index, code_hash if isinstance(code_hash, str) else None, entities)

    def __str__(self):
        items = ", ".join(f"({n!r}, {e!r})" for n, e in self._entity_map.items())
        return f"[{items}],{self.code_hash},{self.index}"

    def __repr__(self):
        return str(self)

    def __eq__(self, other):
        return isinstance(other, ConfigEntity) and list(self._entity_map.items()) == \
            list(other._entity_map.items())

    def __hash__(self):
        return hash(tuple(self._entity_map.items()))

    def __len__(self):
        return 1


def _kind(entity):
    for kind, cls in _ENTITY_OF_KIND.items():
        if type(entity) is cls:
            return kind
    raise ConfigError(f"not a knob entity: {entity!r}")


class FallbackConfigEntity(ConfigSpace):
    """The config used when no tuned one is known: each knob's first entity, unless the template
    sets a default (``if cfg.is_fallback: cfg["tile"] = SplitEntity([-1, 8])``)."""
    is_fallback = True

    def __init__(self):
        super().__init__()
        self._set = set()

    def _add(self, name, space):
        if name not in self.space_map:
            self.space_map[name] = space
        if name not in self._set:
            self._entity_map[name] = space[0]

    def __setitem__(self, name, entity):
        if not isinstance(entity, tuple(_ENTITY_OF_KIND.values())):
            raise ConfigError(f"cfg[{name!r}] must be a knob entity (SplitEntity, ...), got {entity!r}")
        self._entity_map[name] = entity
        self._set.add(name)

    def fallback_split(self, name, constraints):
        """Set knob ``name`` to the split whose inner factors are largest within ``constraints``."""
        space = self.space_map.get(name)
        if not isinstance(space, SplitSpace):
            raise ConfigError(f"fallback_split: {name!r} is not a split knob")
        if len(constraints) != space.num_output:
            raise ConfigError(f"fallback_split: {name!r} has {space.num_output} outputs, got "
                              f"{len(constraints)} constraints")
        best = None
        for e in space.entities:
            if all(c == -1 or f == -1 or f <= c for f, c in zip(e.size, constraints)):
                key = tuple(e.size[::-1])
                if best is None or key > tuple(best.size[::-1]):
                    best = e
        self[name] = best or space[0]

    def fallback_with_reference_log(self, ref_log):
        """Copy knobs from the best record of ``ref_log`` ((inp, res) pairs) whose names match."""
        best = None
        for inp, res in ref_log:
            if res.error_no == 0 and (best is None or sum(res.costs) / len(res.costs) < best[0]):
                best = (sum(res.costs) / len(res.costs), inp.config)
        if best is not None:
            for name, e in best[1]._entity_map.items():
                if name in self.space_map:
                    self[name] = e

    def __repr__(self):
        return f"FallbackConfigEntity({dict(self._entity_map)})"

    __str__ = __repr__
