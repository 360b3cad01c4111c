"""What the Pillow peers (pillow_peer.py, pillow_loader.py) share: the files
shardify would read and torchvision's Resize(N) geometry."""
import os

# shardify's candidate extensions (lib/source/scan.c), compared in lower case
EXTENSIONS = {".jpg", ".jpeg", ".png", ".webp", ".tif", ".tiff", ".gif", ".bmp"}


def list_images(src):
    """Every candidate file under src, in a stable (sorted) walk order."""
    paths = []
    for root, dirs, files in os.walk(src):
        dirs.sort()
        for name in sorted(files):
            if os.path.splitext(name)[1].lower() in EXTENSIONS:
                paths.append(os.path.join(root, name))
    return paths


def shorter_side_to(w, h, size):
    """(width, height) with the shorter side `size` and the other
    floor(other * size / shorter), at least 1: torchvision's Resize(size)."""
    if w <= h:
        return size, max(1, h * size // w)
    return max(1, w * size // h), size
