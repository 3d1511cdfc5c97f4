import torch


def _to_xyxy(boxes, fmt):
    if fmt == "xyxy":
        return boxes
    a, b, c, d = boxes.unbind(-1)
    if fmt == "xywh":
        return torch.stack((a, b, a + c, b + d), dim=-1)
    if fmt == "cxcywh":
        return torch.stack((a - 0.5 * c, b - 0.5 * d, a + 0.5 * c, b + 0.5 * d), dim=-1)
    raise ValueError(fmt)


def _from_xyxy(boxes, fmt):
    if fmt == "xyxy":
        return boxes
    x1, y1, x2, y2 = boxes.unbind(-1)
    if fmt == "xywh":
        return torch.stack((x1, y1, x2 - x1, y2 - y1), dim=-1)
    if fmt == "cxcywh":
        w, h = x2 - x1, y2 - y1
        return torch.stack((x1 + 0.5 * w, y1 + 0.5 * h, w, h), dim=-1)
    raise ValueError(fmt)


def box_convert(boxes, in_fmt, out_fmt):
    if in_fmt == out_fmt:
        return boxes.clone()
    return _from_xyxy(_to_xyxy(boxes, in_fmt), out_fmt)
