"""Random byte-level mutations for the scanner fuzz tests (XML, detection text, JSON), and
the VOC annotation samples the XML scanner tests share."""
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


# ------------------------------------------------------------------ VOC annotation samples

OBJ = (b"<object><name>dog</name><pose>Left</pose><truncated>0</truncated>"
       b"<difficult>0</difficult><bndbox><xmin>48</xmin><ymin>240</ymin>"
       b"<xmax>195</xmax><ymax>371</ymax></bndbox></object>")


def doc(body=OBJ, head=b""):
    """A minimal annotation document around ``body``."""
    return head + b"<annotation><folder>VOC2007</folder><filename>1.jpg</filename>" + \
        body + b"</annotation>"


XML_ALPHABET = b"<>/&!?=\"' \t\n\r-.:_;[]xnameobjectbdifcult0123456789\x00\x7f\x80\xc3\xef"
XML_SNIPPETS = [b"<name>x</name>", b"<name/>", b"<bndbox><xmin>3</xmin></bndbox>", b"<bndbox/>",
                b"<xmin>5</xmin>", b"<ymax> 7 </ymax>", b"<difficult>1</difficult>",
                b"<difficult/>", b"<part><name>p</name><bndbox><xmin>1</xmin></bndbox></part>",
                b"<object><name>o</name></object>", b"<object/>", b"<!-- c -->",
                b"<![CDATA[z]]>", b"&amp;", b"<?pi?>", b"</object>", b"<object>", b"</bndbox>",
                b"<b>", b"</b>", b"<x a='1'/>", b"\xc3\xa9", b"  \n\t", b"<annotation/>"]
