"""docs/guide/pytorch.md's fields example, as written: a Loader carrying a
caption (text), metadata (json), a score (int) and tags (labels, multi-hot)
over shards declaring them, each batch's fields what its comments say."""
import json
import os
import shutil

import pytest

from conftest import SAMPLE, doc_blocks, sample_images, shardify

torch = pytest.importorskip("torch")
import shardkit  # noqa: E402

N = 300  # a full batch of 256 and a partial one


def fields_example():
    """The guide's Python block that selects fields."""
    found = [b for b in doc_blocks("docs/guide/pytorch.md", "python") if "fields=[" in b]
    assert len(found) == 1, "docs/guide/pytorch.md has one fields example"
    return found[0]


@pytest.fixture(scope="module")
def declared(workdir):
    """N photos in two class folders, and a table giving every sample a
    caption, metadata and tags, and every third sample a score."""
    src = os.path.join(workdir, "guide-fields-src")
    dst = os.path.join(workdir, "guide-fields")
    table = os.path.join(workdir, "guide-fields.jsonl")
    if not os.path.exists(os.path.join(dst, "manifest.json")):
        rows = []
        for k, name in enumerate(sample_images()[:N]):
            cls = ("ant", "bee")[k % 2]
            os.makedirs(os.path.join(src, cls), exist_ok=True)
            shutil.copy(os.path.join(SAMPLE, name), os.path.join(src, cls, name))
            row = {"key": f"{cls}/{name}", "caption": f"photo {k}", "meta": {"k": k},
                   "tags": ["ant", "bee"] if k % 5 == 0 else [cls]}
            if k % 3 == 0:
                row["score"] = k
            rows.append(row)
        with open(table, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
        shardify(src, dst, "--size", "240", "--annotations", table, "--field", "caption=text",
                 "--field", "meta=json", "--field", "score=int", "--field", "tags=labels")
    return dst


def test_the_guide_fields_example_runs_as_written(declared, tmp_path, monkeypatch):
    os.symlink(declared, tmp_path / "shards")
    monkeypatch.chdir(tmp_path)
    names = {"shardkit": shardkit}
    exec(compile(fields_example(), "docs/guide/pytorch.md", "exec"), names)
    ds, batch = names["ds"], names["batch"]
    # the last batch: what its comments say each field is
    b = len(batch.indices)
    assert b == N - 256
    captions, metas = names["captions"], names["metas"]
    assert all(isinstance(c, str) and c.startswith("photo ") for c in captions)
    assert [m["k"] for m in metas] == [int(c.split()[1]) for c in captions]
    scores, has_score = names["scores"], names["has_score"]
    assert scores.dtype == torch.int64 and tuple(scores.shape) == (b,)
    ks = [m["k"] for m in metas]
    assert has_score.tolist() == [k % 3 == 0 for k in ks]
    assert scores.tolist() == [k if k % 3 == 0 else 0 for k in ks]
    tags = names["tags"]
    assert tags.dtype == torch.uint8 and tuple(tags.shape) == (b, len(ds.labels))
    assert ds.labels == ["ant", "bee"]
    assert tags.tolist() == [[1, 1] if k % 5 == 0 else [int(k % 2 == 0), int(k % 2 == 1)]
                             for k in ks]
