"""A reference evaluator of integer index expressions, in Python ints, for the arithmetic tests."""
from tvmlab.ir import expr as E


def _tdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def evaluate(e, env):
    """Python-int reference semantics (floor for FloorDiv/FloorMod, C for Div/Mod)."""
    t = type(e)
    if t is E.IntImm:
        return e.value
    if isinstance(e, E.Var):
        return env[e]
    if t is E.Broadcast:
        return [evaluate(e.value, env)] * e.lanes
    if t is E.Ramp:
        b, s = evaluate(e.base, env), evaluate(e.stride, env)
        return [b + s * q for q in range(e.lanes)]
    binary = {E.Add: lambda a, b: a + b, E.Sub: lambda a, b: a - b, E.Mul: lambda a, b: a * b,
              E.FloorDiv: lambda a, b: a // b, E.FloorMod: lambda a, b: a % b, E.Div: _tdiv,
              E.Mod: lambda a, b: a - b * _tdiv(a, b), E.Min: min, E.Max: max,
              E.LT: lambda a, b: int(a < b), E.LE: lambda a, b: int(a <= b),
              E.GT: lambda a, b: int(a > b), E.GE: lambda a, b: int(a >= b),
              E.EQ: lambda a, b: int(a == b), E.NE: lambda a, b: int(a != b),
              E.And: lambda a, b: int(a and b), E.Or: lambda a, b: int(a or b)}
    if t in binary:
        a, b = evaluate(e.a, env), evaluate(e.b, env)
        if isinstance(a, list) or isinstance(b, list):
            a = a if isinstance(a, list) else [a] * len(b)
            b = b if isinstance(b, list) else [b] * len(a)
            return [binary[t](p, q) for p, q in zip(a, b)]
        return binary[t](a, b)
    if t is E.Not:
        return int(not evaluate(e.a, env))
    if t is E.Select:
        return evaluate(e.true_value if evaluate(e.condition, env) else e.false_value, env)
    raise TypeError(f"cannot evaluate {t.__name__}")
