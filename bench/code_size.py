"""Size of ember/ in lines of Python, at git revisions, and what a set of commits added to it.

Issue 12's figure "ember/ shrinks (excluding new features)": the issue's own commits (its items 1-6:
the in-caller protocol, the engine interface, the OpDef fields, the backend table, Python ops through
the engine, the clean-up) are picked from `--since`..`--until` by their subject's component prefix,
and their net ember/ lines are summed; clean-up commits after that are summed the same way, so the
two can be set against each other while the features of the other issues grow the tree.

    python3 bench/code_size.py --revs 35b870d 3d20917 HEAD
    python3 bench/code_size.py --since 35b870d --until 3d20917 --subjects '^(engine|backend|fastpath|...)[ .:]'
"""
import argparse
import json
import re
import subprocess

ISSUE12_SUBJECTS = r"^(engine|backend|fastpath|imperative|invoke|cleanup|OpDef|executor|copying|kvstore)[ .:]"


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def python_lines(rev: str) -> int:
    """Lines of every ember/**/*.py file at `rev` (blank lines, comments and docstrings included)."""
    files = [f for f in git("ls-tree", "-r", "--name-only", rev, "ember").split() if f.endswith(".py")]
    return sum(git("show", f"{rev}:{f}").count("\n") for f in files)


def net_lines(commit: str) -> int:
    """Lines a commit added to ember/**/*.py minus the lines it removed there."""
    total = 0
    for row in git("show", "--numstat", "--format=", commit, "--", "ember").splitlines():
        added, removed, path = row.split("\t")
        if path.endswith(".py") and added != "-":
            total += int(added) - int(removed)
    return total


def commits(since: str, until: str, subjects: str):
    pattern = re.compile(subjects)
    for row in git("log", "--reverse", "--format=%h\t%s", f"{since}..{until}").splitlines():
        sha, subject = row.split("\t", 1)
        if pattern.search(subject):
            yield sha, subject


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--revs", nargs="*", default=[], help="revisions whose ember/ size to print")
    p.add_argument("--since", help="first commit (excluded) of the range to sum")
    p.add_argument("--until", default="HEAD", help="last commit of the range to sum")
    p.add_argument("--subjects", default=ISSUE12_SUBJECTS, help="regex a commit subject must match to count")
    p.add_argument("-v", "--verbose", action="store_true", help="list every counted commit")
    args = p.parse_args()
    for rev in args.revs:
        print(json.dumps({"rev": rev, "commit": git("rev-parse", "--short", rev).strip(),
                          "ember_python_lines": python_lines(rev)}))
    if args.since:
        picked = [(sha, subject, net_lines(sha)) for sha, subject in commits(args.since, args.until, args.subjects)]
        if args.verbose:
            for sha, subject, n in picked:
                print(f"{n:+5d} {sha} {subject[:100]}")
        print(json.dumps({"since": args.since, "until": args.until, "subjects": args.subjects,
                          "commits": len(picked), "net_lines": sum(n for _, _, n in picked)}))


if __name__ == "__main__":
    main()
