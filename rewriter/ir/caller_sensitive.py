"""Calls of library functions that look at where they were called from.

glibc's ``dlsym`` and ``dlvsym`` find the calling object by the return address their call
leaves: ``RTLD_NEXT`` means the objects loaded after it. A copy's return address lies in no
loaded object, and glibc then fails the lookup ("RTLD_NEXT used in code not dynamically
loaded": NULL), so a program that interposes a library function and finds the real one so
(and clang's sanitizer run times, linked into the program) broke in every copy that returns
to copies. Calls that reach such a function leave the original return address instead,
as every call does with original return addresses (decision 0176), on every ISA.
"""

from __future__ import annotations

from .model import Binary, Instruction, Procedure

#: Imported functions that look at their caller's return address.
CALLER_SENSITIVE = frozenset({"dlsym", "dlvsym"})
#: Access bases that make ``disp`` an absolute link-time address (ARM's PC, x86-64's RIP).
_LITERAL_BASES = (15, 16)


def caller_sensitive_returns(binary: Binary, procs: list[Procedure]) -> set[int]:
    """The return sites of the calls in ``procs`` that reach a CALLER_SENSITIVE function: at
    its PLT entry, through its GOT slot (``binary.import_slots``), or through a procedure
    that goes on to one by a tail jump (whose caller's return address is the one the
    function sees; any of the program's, copied or not)."""
    def sensitive(name: str) -> bool:
        return name.split("@")[0] in CALLER_SENSITIVE

    targets = {address for address, name in binary.plt.items() if sensitive(name)}
    slots = {slot for slot, name in binary.import_slots.items() if sensitive(name)}
    if not targets and not slots:
        return set()

    def reaches(ins: Instruction) -> bool:
        return ins.branch_target in targets or \
            any(a.base in _LITERAL_BASES and a.disp in slots for a in ins.accesses)

    tails = {}  # procedure -> its jumps out of itself
    for proc in binary.procedures:
        inside = {ins.address for ins in proc.instructions()}
        tails[proc.address] = [ins for ins in proc.instructions() if ins.is_branch and not ins.is_call
                               and (ins.branch_target is None or ins.branch_target not in inside)]
    grown = True
    while grown:
        grown = False
        for proc in binary.procedures:
            if proc.address not in targets and any(reaches(ins) for ins in tails[proc.address]):
                targets.add(proc.address)
                grown = True
    return {ins.end for proc in procs for ins in proc.instructions() if ins.is_call and reaches(ins)}
