"""Memory planning for the graph executor: intermediate tensors share storage once their readers are done.

Graph inputs, parameters and outputs keep storage of their own.  Every
other entry takes, when its node runs, a free block of the same dtype (the
smallest that fits, else the largest free one, grown) and gives it back after
its last reader has run; a node's outputs never share storage with its inputs,
except a ``__nop`` node's (a group that only reshapes): its output is a view
of its input's storage, which then lives until the view's readers are done
too (and for good when the view is a graph output).
"""
from __future__ import annotations

import numpy as np

NOP = "__nop"


def _bytes(shape, dtype):
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize if shape else np.dtype(dtype).itemsize


def is_nop(node):
    return node["op"] != "null" and node.get("attrs", {}).get("func_name") == NOP


def plan_memory(nodes, row_ptr, shapes, dtypes, heads):
    """Storage id per entry, and stats {"planned_bytes", "unplanned_bytes", "storages"}."""
    n_entries = row_ptr[-1]
    eid = lambda nid, k: row_ptr[nid] + k  # noqa: E731
    owner = [nid for nid in range(len(nodes)) for _ in range(row_ptr[nid], row_ptr[nid + 1])]
    refs = [0] * n_entries
    for node in nodes:
        for i, k, _ in node.get("inputs", []):
            refs[eid(i, k)] += 1
    pinned = {eid(n, k) for n, k in heads}
    root = list(range(n_entries))          # entry -> the entry whose storage it is (a __nop's input's)
    for nid, node in enumerate(nodes):
        if is_nop(node):
            i, k, _ = node["inputs"][0]
            r = root[eid(nid, 0)] = root[eid(i, k)]
            refs[r] += refs[eid(nid, 0)]    # the view's readers keep the viewed storage alive
            if eid(nid, 0) in pinned:
                pinned.add(r)
    storage = [-1] * n_entries
    sizes = []                 # storage id -> bytes
    sdtype = []
    free = []                  # storage ids free to reuse

    def release(e):            # one read of entry e (or of a view of it) is done
        r = root[e]
        refs[r] -= 1
        if refs[r] == 0 and nodes[owner[r]]["op"] != "null" and r not in pinned and storage[r] not in free:
            free.append(storage[r])

    for nid, node in enumerate(nodes):
        n_out = row_ptr[nid + 1] - row_ptr[nid]
        if node["op"] == "null":
            for k in range(n_out):
                e = eid(nid, k)
                storage[e] = len(sizes)
                sizes.append(_bytes(shapes[e], dtypes[e]))
                sdtype.append(dtypes[e])
            continue
        if is_nop(node):
            i, k, _ = node["inputs"][0]
            storage[eid(nid, 0)] = storage[root[eid(i, k)]]
            release(eid(i, k))
            continue
        for k in range(n_out):
            e = eid(nid, k)
            need = _bytes(shapes[e], dtypes[e])
            if e in pinned:
                storage[e] = len(sizes)
                sizes.append(need)
                sdtype.append(dtypes[e])
                continue
            fits = [s for s in free if sdtype[s] == dtypes[e] and sizes[s] >= need]
            same = [s for s in free if sdtype[s] == dtypes[e]]
            if fits:
                sid = min(fits, key=lambda s: sizes[s])
            elif same:
                sid = max(same, key=lambda s: sizes[s])
                sizes[sid] = need
            else:
                sid = len(sizes)
                sizes.append(need)
                sdtype.append(dtypes[e])
            if sid in free:
                free.remove(sid)
            storage[e] = sid
        for i, k, _ in node["inputs"]:
            release(eid(i, k))
        for k in range(n_out):            # an output nobody reads is free at once
            e = eid(nid, k)
            if refs[e] == 0 and e not in pinned and storage[e] not in free:
                free.append(storage[e])
    op_entries = [e for nid, node in enumerate(nodes) if node["op"] != "null" and not is_nop(node)
                  for e in range(row_ptr[nid], row_ptr[nid + 1])]
    op_storages = {storage[e] for e in op_entries}
    stats = {"unplanned_bytes": sum(_bytes(shapes[e], dtypes[e]) for e in op_entries),
             "planned_bytes": sum(sizes[s] for s in op_storages),
             "storages": len(sizes)}
    return storage, stats
