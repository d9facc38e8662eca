"""Unit tests of the hybrid example's corpus and classification (no services)."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest
from hybrid_fixtures import INSTALLED, STATUS, write_status

from examples.hybrid import classify, packages

REAL_STATUS = Path(packages.STATUS_PATH)


def test_parse_status_keeps_installed_packages_sorted() -> None:
    found = packages.parse_status(STATUS.splitlines(keepends=True))
    assert [p["name"] for p in found] == INSTALLED
    gzip_ = found[0]
    assert gzip_["version"] == "1.12-1" and gzip_["section"] == "utils"
    assert gzip_["installed_kb"] == 245 and gzip_["priority"] == "required"
    assert gzip_["summary"] == "GNU compression utilities"
    assert gzip_["depends"] == ["libc6", "dpkg"]
    assert gzip_["homepage"] == "https://www.gnu.org/software/gzip/"


@pytest.mark.parametrize(("raw", "summary", "text"), [
    ("one line only", "one line only", ""),
    ("synopsis\n first\n second", "synopsis", "first second"),
    ("synopsis\n first\n .\n second", "synopsis", "first\n\nsecond"),
    ("synopsis\n intro:\n  verbatim one\n  verbatim two", "synopsis",
     "intro:\nverbatim one\nverbatim two"),
    ("synopsis\n .\n .\n after blanks", "synopsis", "after blanks"),
])
def test_description_text_follows_policy_5_6_13(raw: str, summary: str, text: str) -> None:
    assert packages.description_text(raw) == (summary, text)


@pytest.mark.parametrize(("raw", "names"), [
    ("", []),
    ("libc6 (>= 2.34), gpgv | gpgv2, libc6", ["libc6", "gpgv"]),
    ("python3:any, perl:any (>= 5.10)", ["python3", "perl"]),
    ("libstdc++6 (>= 11), lib.foo-1.0", ["libstdc++6", "lib.foo-1.0"]),
])
def test_relation_names(raw: str, names: list[str]) -> None:
    assert packages.relation_names(raw) == names


def test_load_packages_caches_until_the_file_changes(tmp_path: Path) -> None:
    path = write_status(tmp_path)
    first = packages.load_packages(path)
    assert packages.load_packages(path) is first
    with open(path, "a", encoding="utf-8") as f:
        f.write("\nPackage: late\nStatus: install ok installed\nSection: utils\n"
                "Description: added later\n")
    os.utime(path, ns=(1, 1))  # a new mtime, whatever the clock's resolution
    assert "late" in [p["name"] for p in packages.load_packages(path)]


def test_load_packages_names_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"no dpkg status file at .*nope"):
        packages.load_packages(str(tmp_path / "nope"))


def test_the_machines_own_status_file_parses() -> None:
    if not REAL_STATUS.exists():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{REAL_STATUS} is missing: CI runs on Debian")
        pytest.skip(f"not a Debian system ({REAL_STATUS} is missing)")
    found = packages.load_packages()
    names = [p["name"] for p in found]
    assert {"dpkg", "coreutils"} <= set(names)
    assert names == sorted(names) and len(names) == len(set(names))
    dpkg = packages.find(found, "dpkg")
    assert dpkg is not None and dpkg["summary"] and dpkg["section"] == "admin"


def test_read_docs_prefers_readme_debian_and_reads_gzip(tmp_path: Path) -> None:
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "README").write_text("plain readme")
    with gzip.open(folder / "README.Debian.gz", "wt") as f:
        f.write("Debian notes " * 200)
    path, text = packages.read_docs("pkg", str(tmp_path), max_chars=26)  # 2 x 13 chars
    assert path.endswith("README.Debian.gz") and text == "Debian notes Debian notes"


def test_read_docs_without_docs_or_with_a_broken_file(tmp_path: Path) -> None:
    assert packages.read_docs("absent", str(tmp_path)) == ("", "")
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "README.Debian.gz").write_bytes(b"not gzip at all")
    (folder / "README").write_text("fallback")
    assert packages.read_docs("broken", str(tmp_path)) == (str(folder / "README"), "fallback")


@pytest.mark.parametrize(("name", "section", "category"), [
    ("libexpat1-dev", "libdevel", "development"),
    ("libfoo-dev", "libs", "development"),        # the name rule comes first
    ("python3-yaml", "python", "language runtimes"),
    ("libyaml-perl", "perl", "language runtimes"),
    ("fonts-dejavu", "fonts", "documents and text"),
    ("libexpat1", "libs", "shared libraries"),
    ("gzip", "utils", "system administration"),
    ("openssh-client", "net", "networking"),
    ("postgresql-15", "database", "databases"),
    ("firefox", "contrib/web", "other"),          # an area prefix is the caller's to strip
    ("ncurses-base", "misc", "other"),
])
def test_classify_package(name: str, section: str, category: str) -> None:
    got = classify.classify_package({"name": name, "section": section})
    assert got["category"] == category and got["name"] == name and got["reason"]


def test_parse_status_strips_the_archive_area_of_a_section() -> None:
    text = "Package: x\nStatus: install ok installed\nSection: contrib/web\nDescription: d\n"
    assert packages.parse_status(text.splitlines(keepends=True))[0]["section"] == "web"


def test_classify_batch_refuses_a_record_without_a_name() -> None:
    with pytest.raises(TypeError, match="package record with a name"):
        classify.classify_batch([{"section": "utils"}])


def test_batches_cover_every_item_in_order() -> None:
    items = [packages.brief(p) for p in packages.parse_status(STATUS.splitlines(True))]
    cut = classify.batches(items, 4)
    assert [len(b) for b in cut] == [4, 4, 1]
    assert [p for b in cut for p in b] == items
    with pytest.raises(ValueError, match="batch size"):
        classify.batches(items, 0)


def test_profile_counts_sizes_and_largest_per_class() -> None:
    briefs = [packages.brief(p) for p in packages.parse_status(STATUS.splitlines(True))]
    classified = [classify.classify_batch(b) for b in classify.batches(briefs, 4)]
    profile = classify.profile([*classified, None], briefs, top=2)
    assert profile["packages"] == 9
    assert profile["by_category"] == {"system administration": 3, "development": 1,
                                      "databases": 1, "language runtimes": 1,
                                      "networking": 1, "other": 1, "shared libraries": 1}
    assert profile["largest"]["system administration"] == ["zstd", "xz-utils"]
    assert profile["category_of"]["libexpat1-dev"] == "development"
    assert profile["installed_mb"] == round((245 + 1000 + 1600 + 4000 + 400 + 900 + 600
                                             + 50000 + 400) / 1024, 1)
