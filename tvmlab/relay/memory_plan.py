"""Memory planning for the graph executor: intermediate tensors share storage once their readers are done.

Graph inputs, parameters and outputs keep storage of their own.  Every other
entry takes, when its node runs, a free block of the same dtype (the
smallest that fits, else the largest free one, grown) and gives it back after
its last reader has run; a node's outputs never share storage with its inputs.
"""
from __future__ import annotations

import numpy as np


def _bytes(shape, dtype):
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize if shape else np.dtype(dtype).itemsize


def plan_memory(nodes, row_ptr, shapes, dtypes, heads):
    """Storage id per entry, and stats {"planned_bytes", "unplanned_bytes", "storages"}."""
    n_entries = row_ptr[-1]
    eid = lambda nid, k: row_ptr[nid] + k  # noqa: E731
    refs = [0] * n_entries
    for node in nodes:
        for i, k, _ in node.get("inputs", []):
            refs[eid(i, k)] += 1
    pinned = {eid(n, k) for n, k in heads}
    storage = [-1] * n_entries
    sizes = []                 # storage id -> bytes
    sdtype = []
    free = []                  # storage ids free to reuse
    for nid, node in enumerate(nodes):
        n_out = row_ptr[nid + 1] - row_ptr[nid]
        if node["op"] == "null":
            for k in range(n_out):
                e = eid(nid, k)
                storage[e] = len(sizes)
                sizes.append(_bytes(shapes[e], dtypes[e]))
                sdtype.append(dtypes[e])
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
            e = eid(i, k)
            refs[e] -= 1
            if refs[e] == 0 and nodes[i]["op"] != "null" and e not in pinned:
                free.append(storage[e])
        for k in range(n_out):            # an output nobody reads is free at once
            e = eid(nid, k)
            if refs[e] == 0 and e not in pinned and storage[e] not in free:
                free.append(storage[e])
    op_entries = [e for nid, node in enumerate(nodes) if node["op"] != "null"
                  for e in range(row_ptr[nid], row_ptr[nid + 1])]
    op_storages = {storage[e] for e in op_entries}
    stats = {"unplanned_bytes": sum(_bytes(shapes[e], dtypes[e]) for e in op_entries),
             "planned_bytes": sum(sizes[s] for s in op_storages),
             "storages": len(sizes)}
    return storage, stats
