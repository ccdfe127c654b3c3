#!/usr/bin/env python3
"""Makes cmyk.jpg: a 16x16 CMYK JPEG (C, M, Y, K = 10, 20, 30, 40 everywhere, quality 90),
the kind print workflows write, which Parallax refuses by name instead of calling it corrupt.

Needs Pillow (pip install pillow; made with Pillow 13.0.0 on Python 3.11). Run from any folder:
    python3 Tests/Fixtures/images/make_cmyk_jpeg.py
"""
import os
from PIL import Image

here = os.path.dirname(os.path.abspath(__file__))
Image.new("CMYK", (16, 16), (10, 20, 30, 40)).save(os.path.join(here, "cmyk.jpg"), quality=90)
