"""deteval: exact, fast PASCAL VOC and COCO evaluation for object detectors."""
__version__ = "0.1.0"
