# SPDX-License-Identifier: GPL-2.0
"""The documentation cannot drift from the tree.

docs/architecture.md's file map must name every source file (every .c, .S
and .h in the repository), every file under scripts/ and every folder
directly under guest/ and tests/, and every name it gives must exist. Every
relative link in README.md and docs/ (and any other .md file) must reach a
file that exists and, for #anchor links into Markdown, a heading there, by
GitHub's anchor rules. The last tests run the same checks on a small made-up
tree, so that each kind of drift is shown to be caught.

The map is the fenced block under "## File map": a line that starts in
column 0 opens a folder's entry ("core/  main.c (...), ..."), indented
lines continue it. A name is a path relative to its entry's folder: a word
ending in a known file extension, or in "/" for a folder; NAME in a name
stands for any word (unit/test_NAME.c).
"""
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Folders the map must have an entry for, each with every file in it named.
MAPPED = ["core/", "x86/", "arm/", "virtio/", "fs/", "disk/", "net/", "hw/",
          "include/lkvm/", "guest/", "tests/", "scripts/"]
SOURCE_EXT = (".c", ".S", ".h")
# Every file under these, whatever its kind, is named in the map.
ALL_FILES = ("scripts/",)
# Every folder directly under these is named in the map.
SUBFOLDERS = ("guest/", "tests/")
# Not part of the source tree: build outputs, git, caches.
SKIP_TOP = {"build"}

NAME_EXT = re.compile(r"\.(c|S|h|sh|py|mk|ld|patch|md)$")
TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+/-]*")


def walk(root):
    """Every file and folder of the source tree, as paths relative to root
    with "/" separators (folders end in "/")."""
    files, folders = [], []
    for top, dirs, names in os.walk(root):
        rel = os.path.relpath(top, root)
        rel = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                         and d != "__pycache__"
                         and not (rel == "" and d in SKIP_TOP))
        folders += [rel + d + "/" for d in dirs]
        files += [rel + n for n in sorted(names) if not n.startswith(".")]
    return files, folders


def file_map(root):
    """{folder: [names, relative to the repository]} from the map."""
    text = (root / "docs" / "architecture.md").read_text()
    m = re.search(r"^## File map\n.*?^```\n(.*?)^```", text, re.S | re.M)
    assert m, "docs/architecture.md has no fenced block under '## File map'"
    entries, folder = {}, None
    for line in m.group(1).splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            folder, _, line = line.partition(" ")
            assert folder.endswith("/"), \
                "file map: %r does not start with a folder" % folder
            assert folder not in entries, \
                "file map: two entries for %s" % folder
            entries[folder] = []
        assert folder, "file map: text before the first folder"
        for word in TOKEN.findall(line):
            word = word.rstrip(".")
            if word.endswith("/") or NAME_EXT.search(word):
                entries[folder].append(folder + word)
    return entries


def name_pattern(name):
    """A map name as a regular expression over repository paths."""
    parts = [re.escape(p) for p in name.split("NAME")]
    return re.compile("[A-Za-z0-9_]+".join(parts) + r"\Z")


def map_problems(root):
    """(names that do not exist, files the map does not name)."""
    entries = file_map(root)
    files, folders = walk(root)
    existing = set(files) | set(folders)
    named, patterns, missing = set(), [], []
    for folder, names in entries.items():
        if folder not in folders:
            missing.append("%s (an entry for a folder that does not exist)"
                           % folder)
        for name in names:
            if "NAME" in name:
                pat = name_pattern(name)
                patterns.append(pat)
                if not any(pat.match(f) for f in existing):
                    missing.append("%s (matches no file)" % name)
            elif name in existing:
                named.add(name)
            else:
                missing.append(name)
    unnamed = []
    for path in files + folders:
        if path.endswith("/"):
            required = any(path.startswith(s) and
                           path[len(s):].count("/") == 1 for s in SUBFOLDERS)
        else:
            required = path.endswith(SOURCE_EXT) or path.startswith(ALL_FILES)
        if required and path not in named \
                and not any(p.match(path) for p in patterns):
            unnamed.append(path)
    return entries, missing, unnamed


def github_anchor(heading):
    """The id GitHub gives a Markdown heading: its text without markup,
    lower case, punctuation dropped (not "-" or "_"), each space a "-"."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def strip_code(text):
    """Markdown without fenced blocks and code spans, where a link is not one."""
    text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(path):
    """Every heading's anchor in a Markdown file, duplicates numbered."""
    seen, out = {}, set()
    text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", path.read_text(),
                  flags=re.S | re.M)
    for m in re.finditer(r"^#{1,6}[ \t]+(.*?)[ \t#]*$", text, re.M):
        a = github_anchor(m.group(1))
        n = seen.get(a, 0)
        seen[a] = n + 1
        out.add(a if n == 0 else "%s-%d" % (a, n))
    return out


LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def link_problems(root, md):
    """Relative links in md (a path under root) that reach nothing."""
    problems = []
    src = root / md
    for target in LINK.findall(strip_code(src.read_text())):
        if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", target):
            continue                    # https:, mailto:: not ours to check
        path, _, anchor = target.partition("#")
        dest = (src.parent / path).resolve() if path else src.resolve()
        if root.resolve() not in [dest, *dest.parents]:
            problems.append("%s: %s leaves the repository" % (md, target))
        elif not dest.exists():
            problems.append("%s: %s: no such file" % (md, target))
        elif anchor and dest.suffix == ".md":
            if anchor not in anchors(dest):
                problems.append("%s: %s: no such heading in %s" % (
                    md, target, dest.relative_to(root.resolve())))
        elif anchor and not re.fullmatch(r"L\d+(-L\d+)?", anchor):
            problems.append("%s: %s: an anchor into a file that is not "
                            "Markdown" % (md, target))
    return problems


def markdown_files(root):
    return [f for f in walk(root)[0] if f.endswith(".md")]


def test_file_map_has_an_entry_per_folder():
    entries = file_map(ROOT)
    assert [f for f in MAPPED if f not in entries] == []


def test_file_map_names_only_what_exists():
    _, missing, _ = map_problems(ROOT)
    assert missing == [], \
        "docs/architecture.md's file map names what is not there: " + \
        ", ".join(missing)


@pytest.mark.parametrize("folder", MAPPED + ["elsewhere"])
def test_file_map_names_every_file(folder):
    _, _, unnamed = map_problems(ROOT)
    if folder == "elsewhere":
        mine = [p for p in unnamed if not p.startswith(tuple(MAPPED))]
    else:
        mine = [p for p in unnamed if p.startswith(folder)]
    assert mine == [], \
        "add to docs/architecture.md's file map (a few words each): " + \
        ", ".join(mine)


@pytest.mark.parametrize("md", markdown_files(ROOT))
def test_links_reach_files_and_headings(md):
    problems = link_problems(ROOT, md)
    assert problems == [], "broken links: " + "; ".join(problems)


def test_github_anchors():
    # As GitHub makes them (the README's links used these before docs/).
    assert github_anchor("Polling and I/O threads") == \
        "polling-and-io-threads"
    assert github_anchor("Boot time against the peers (same box, "
                         "2026-12-02, `make bench-boot-peers`)") == \
        "boot-time-against-the-peers-same-box-2026-12-02-make-bench-boot-peers"
    assert github_anchor("Shared folders and lkvm sandbox") == \
        "shared-folders-and-lkvm-sandbox"
    assert github_anchor("What `--stats` says, in [JSON](x.md)") == \
        "what---stats-says-in-json"


def fake_tree(tmp_path, map_lines, docs=None):
    for f in ["core/run.c", "core/vm.c", "tests/tier.py",
              "tests/unit/test_vm.c", "tests/unit/test_run.c",
              "scripts/run.sh", "build/core/gen.c", ".git/hook.c",
              "docs/other.md"]:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("# Other\n\n## A heading, with `code`\n"
                                  if f.endswith(".md") else "")
    (tmp_path / "docs" / "architecture.md").write_text(
        "# Architecture\n\n## File map\n\n```\n" + "\n".join(map_lines) +
        "\n```\n" + (docs or ""))
    return tmp_path


GOOD_MAP = ["core/    run.c (the run), vm.c (the VM).",
            "tests/   tier.py, unit/ (unit/test_NAME.c)",
            "scripts/ run.sh"]


def test_a_complete_map_passes(tmp_path):
    root = fake_tree(tmp_path, GOOD_MAP)
    _, missing, unnamed = map_problems(root)
    assert (missing, unnamed) == ([], [])


def test_a_file_left_out_of_the_map_is_caught(tmp_path):
    root = fake_tree(tmp_path, ["core/    run.c (the run)"] + GOOD_MAP[1:])
    assert map_problems(root)[2] == ["core/vm.c"]
    root = fake_tree(tmp_path, GOOD_MAP[:1] + ["tests/   tier.py"] +
                     GOOD_MAP[2:])
    assert map_problems(root)[2] == ["tests/unit/test_run.c",
                                     "tests/unit/test_vm.c", "tests/unit/"]
    (tmp_path / "x86").mkdir()
    (tmp_path / "x86" / "cpu.S").write_text("")
    root = fake_tree(tmp_path, GOOD_MAP)
    assert map_problems(root)[2] == ["x86/cpu.S"]


def test_a_name_that_is_not_there_is_caught(tmp_path):
    root = fake_tree(tmp_path, [GOOD_MAP[0] + " bus.c, gone/",
                                GOOD_MAP[1] + " unit/fuzz_NAME.c"] +
                     GOOD_MAP[2:] + ["hw/      serial.c"])
    assert map_problems(root)[1] == [
        "core/bus.c", "core/gone/", "tests/unit/fuzz_NAME.c (matches no "
        "file)", "hw/ (an entry for a folder that does not exist)",
        "hw/serial.c"]


def test_broken_links_are_caught(tmp_path):
    root = fake_tree(tmp_path, GOOD_MAP, docs="""
[ok](other.md#a-heading-with-code) [ok](#file-map) [ok](../core/run.c)
[ok](https://example.org/x#y) `[not a link](nowhere.md)`
[bad](missing.md) [bad](other.md#no-such) [bad](#nothing) [bad](../../x.md)
[bad](../core/run.c#here)
```
[not a link](nowhere.md)
```
""")
    assert link_problems(root, "docs/architecture.md") == [
        "docs/architecture.md: missing.md: no such file",
        "docs/architecture.md: other.md#no-such: no such heading in "
        "docs/other.md",
        "docs/architecture.md: #nothing: no such heading in "
        "docs/architecture.md",
        "docs/architecture.md: ../../x.md leaves the repository",
        "docs/architecture.md: ../core/run.c#here: an anchor into a file "
        "that is not Markdown"]
