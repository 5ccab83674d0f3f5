"""The bridge's routing of forked processes' bytes (rehost/bridge.py, _Processes; decision
0031), with the sessions' byte streams collected instead of sent: each session's stream must
be its parent's up to the fork, then its own, whatever order the connections' bytes come in.
The end-to-end runs (real programs, real server) are in test_rehost.py."""

from __future__ import annotations

import itertools

from rehost.bridge import FORK_HELLO, FORK_MAGIC, _Processes


class _Stream:
    """What a session would have sent to the server."""

    def __init__(self) -> None:
        self.data = b""
        self.ended = False

    def send(self, chunk: bytes) -> None:
        self.data += chunk

    def end(self) -> None:
        self.ended = True


def _hello(parent: int, pid: int, sent: int) -> bytes:
    return FORK_HELLO.pack(FORK_MAGIC, parent, pid, sent & 0xFFFFFFFF, sent >> 32)


def _routed(messages: list[tuple[int, bytes]], root_key: int | None, **options: object
            ) -> tuple[_Stream, _Processes]:
    root = _Stream()
    children: list[_Stream] = []

    def start_child() -> _Stream:
        children.append(_Stream())
        return children[-1]

    processes = _Processes(root, start_child, root_key, **options)  # type: ignore[arg-type]
    for pid, data in messages:
        processes.route(pid, data)
    processes.end()
    return root, processes


def _route_all(messages: list[tuple[int, bytes]], root_key: int | None) -> tuple[_Stream, dict[int, _Stream], int]:
    root, processes = _routed(messages, root_key)
    return root, {pid: s for pid, s in processes.children.items()}, processes.stray  # type: ignore[misc]


def test_children_start_from_their_parents_stream_in_any_order() -> None:
    """Program 10 sends "AB" then forks 11 (2 bytes sent); 11 sends "cd", then forks 12 (2 of
    its own sent); 10 goes on with "EF". On one SOCK_SEQPACKET socket the messages keep
    this order; over TCP each process has its connection, so a child's hello (read as it
    connects) may come before its parent's bytes: every interleaving that keeps each
    process's own order, with the hellos before their children's bytes, gives the same streams."""
    per_process = {
        10: [b"AB", b"EF"],
        11: [_hello(10, 11, 2), b"cd"],
        12: [_hello(11, 12, 2), b"x"],
    }
    expected = {10: b"ABEF", 11: b"ABcd", 12: b"ABcdx"}
    orders = set(itertools.permutations([10, 10, 11, 11, 12, 12]))
    for order in orders:
        if order.index(12) < order.index(11):  # a grandchild's hello comes after its parent's
            continue
        queues = {pid: list(messages) for pid, messages in per_process.items()}
        messages = [(pid, queues[pid].pop(0)) for pid in order]
        for root_key in (None, 10):  # SOCK_SEQPACKET: learnt; TCP: known (its connection came first)
            root, children, stray = _route_all(messages, root_key)
            assert (root.data, children[11].data, children[12].data, stray) == \
                (expected[10], expected[11], expected[12], 0), order
            assert root.ended and all(c.ended for c in children.values())


def test_a_child_of_a_program_that_sent_nothing_yet() -> None:
    """A hello naming a process not seen: the program, which has sent nothing (0 bytes)."""
    root, children, stray = _route_all([(20, _hello(7, 20, 0)), (20, b"child"), (7, b"prog")], None)
    assert (root.data, children[20].data, stray) == (b"prog", b"child", 0)


def test_a_child_whose_parents_bytes_never_come_is_stray() -> None:
    """The hello says 5 bytes of the program's stream had gone; only 2 come: the child's
    bytes cannot be placed and are counted, not sent as a wrong stream."""
    root, children, stray = _route_all([(1, b"ab"), (2, _hello(1, 2, 5)), (2, b"xyz")], None)
    assert (root.data, children, stray) == (b"ab", {}, 3)


def test_streams_not_kept_give_their_children_no_session() -> None:
    """A program whose table says it does not fork keeps no stream: a child that comes anyway
    gets no session and is said (not counted stray: its own line says why). A stream that
    grows past the limit kept is given up: children forked before it did still get theirs,
    whose own streams are kept; later ones, and one whose parent's bytes had not all come,
    get none, with the reason."""
    messages = [(1, b"abc"), (2, _hello(1, 2, 3)), (2, b"child")]
    root, processes = _routed(messages, None, keep_streams=False)
    assert (root.data, processes.children, processes.stray) == (b"abc", {}, 0)
    assert list(processes.unkept) == [2] and "not kept" in processes.unkept[2]

    messages = [(1, b"abcd"), (2, _hello(1, 2, 4)), (2, b"xy"), (3, _hello(1, 3, 12)), (1, b"efgh"),
                (1, b"ijklmnop"), (4, _hello(1, 4, 16)), (3, b"late"), (4, b"later"), (5, _hello(2, 5, 2)),
                (5, b"grandchild")]
    root, processes = _routed(messages, None, keep_limit=10)
    assert root.data == b"abcdefghijklmnop"
    assert {pid: child.data for pid, child in processes.children.items()} == {2: b"abcdxy", 5: b"abcdxygrandchild"}
    assert sorted(processes.unkept) == [3, 4] and all("grew past" in why for why in processes.unkept.values())
    assert processes.stray == 0
