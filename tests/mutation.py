"""Random byte-level mutations for the scanner fuzz tests (XML, detection text, JSON)."""
import random
from typing import Sequence


def mutate(data: bytes, rng: random.Random, alphabet: bytes,
           snippets: Sequence[bytes] = ()) -> bytes:
    """``data`` after 1 to 3 random edits: delete or insert a byte (mostly from
    ``alphabet``), replace a byte, insert one of ``snippets``, or delete a span."""
    data = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        pos = rng.randrange(len(data) + 1)
        op = rng.randrange(5)
        if op == 0 and data:  # delete a byte
            del data[min(pos, len(data) - 1)]
        elif op == 1:  # insert a byte
            data[pos:pos] = bytes([rng.choice(alphabet) if rng.random() < 0.8
                                   else rng.randrange(256)])
        elif op == 2 and data:  # replace a byte
            data[min(pos, len(data) - 1)] = rng.choice(alphabet)
        elif op == 3 and snippets:  # insert a snippet
            data[pos:pos] = rng.choice(snippets)
        elif data:  # delete a span
            data[pos:pos + rng.randrange(1, 40)] = b""
    return bytes(data)
