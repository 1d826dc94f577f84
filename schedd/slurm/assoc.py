"""Slurm's association tree: accounts and users with their shares.

`read_associations(path)` reads `sacctmgr --parsable2 show associations` output (any
columns in any order, with its header; Account, User and Share are required, and
ParentName — sacctmgr's `format=...,ParentName` — places accounts under their parent;
without it every account hangs from root, which the caller is told). `Associations` then
finds the association a job is charged to, creating one with 1 share (and saying so once
per account or user) when the file does not name it, as a site whose associations were not
exported would see it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


class AssocError(ValueError):
    """An associations file that cannot be read (one sentence naming FILE:LINE)."""


@dataclass(eq=False)
class Assoc:
    account: str
    user: str | None  # None: the account's own association
    shares_raw: int | None  # None: FairShare=parent
    parent: Assoc | None = None
    children: list[Assoc] = field(default_factory=list)
    # Usage (CPU-seconds, decayed) and the figures fair-share derives from it.
    usage_raw: float = 0.0
    shares_norm: float = 0.0
    level_fs: float = 0.0
    fs_factor: float = 0.0

    @property
    def name(self) -> str:
        return self.user if self.user is not None else self.account

    def fs_parent(self) -> Assoc | None:
        """The association whose usage and shares this one is measured against (Slurm's
        fs_assoc_ptr: the parent, or for FairShare=parent the grandparent)."""
        parent = self.parent
        while parent is not None and parent.shares_raw is None and parent.parent is not None:
            parent = parent.parent
        return parent


class Associations:
    def __init__(self, root: Assoc, source: str = "", warnings: list[str] | None = None):
        self.root = root
        self.source = source
        self.warnings: list[str] = list(warnings or [])
        self._accounts: dict[str, Assoc] = {}
        self._users: dict[tuple[str, str], Assoc] = {}
        for assoc in self.walk():
            if assoc.user is None:
                self._accounts[assoc.account] = assoc
            else:
                self._users[(assoc.account, assoc.user)] = assoc
        self.normalize_shares()

    @classmethod
    def flat(cls) -> Associations:
        """No associations file: a root to which every account and user is added with 1
        share as jobs name them."""
        return cls(Assoc("root", None, 1))

    def walk(self) -> list[Assoc]:
        out, stack = [], [self.root]
        while stack:
            assoc = stack.pop()
            out.append(assoc)
            stack.extend(reversed(assoc.children))
        return out

    @property
    def user_assocs(self) -> list[Assoc]:
        return [a for a in self.walk() if a.user is not None]

    def normalize_shares(self) -> None:
        """shares_norm = shares / the sum of its siblings' shares (Fair Tree's level)."""
        for assoc in self.walk():
            level = sum(c.shares_raw for c in assoc.children if c.shares_raw is not None)
            for child in assoc.children:
                if child.shares_raw is None:
                    continue
                child.shares_norm = child.shares_raw / level if level else 0.0

    def charged(self, account: str, user: str) -> Assoc:
        """The user association a job of `user` under `account` is charged to."""
        found = self._users.get((account, user))
        if found is not None:
            return found
        acct = self._accounts.get(account)
        if acct is None:
            acct = Assoc(account, None, 1, parent=self.root)
            self.root.children.append(acct)
            self._accounts[account] = acct
            if self.source:
                self.warnings.append(f"{self.source}: account {account!r} is not in the "
                                     "associations; it gets 1 share under root")
        assoc = Assoc(account, user, 1, parent=acct)
        acct.children.append(assoc)
        self._users[(account, user)] = assoc
        if self.source:
            self.warnings.append(f"{self.source}: user {user!r} has no association in "
                                 f"account {account!r}; it gets 1 share")
        self.normalize_shares()
        return assoc

    def default_account(self, user: str) -> str | None:
        for (account, name) in self._users:
            if name == user:
                return account
        return None


_REQUIRED = ("Account", "User", "Share")


def read_associations(path: str | Path) -> Associations:
    name = str(path)
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as err:
        raise AssocError(f"{name}: cannot read the associations ({err.strerror})") from None
    rows = [(i, line) for i, line in enumerate(lines, 1) if line.strip()]
    if not rows:
        raise AssocError(f"{name}: expected sacctmgr --parsable2 output with a header, "
                         "found an empty file")
    head_line, head = rows[0]
    trailing = head.endswith("|")  # --parsable ends every line with '|', --parsable2 not
    columns = [c.strip() for c in (head[:-1] if trailing else head).split("|")]
    index = {c.lower().replace(" ", ""): k for k, c in enumerate(columns)}
    for col in _REQUIRED:
        if col.lower() not in index:
            raise AssocError(f"{name}:{head_line}: expected a column {col} in the header "
                             f"(sacctmgr --parsable2 show associations), found "
                             f"{', '.join(columns)}")
    parent_col = index.get("parentname", index.get("parname"))
    warnings = []
    if parent_col is None:
        warnings.append(f"{name}: no ParentName column; every account is taken as a child "
                        "of root (sacctmgr ... format=Account,User,Share,ParentName gives "
                        "the tree)")
    accounts: dict[str, Assoc] = {}
    parents: dict[str, str] = {}
    users: list[tuple[int, Assoc]] = []
    root: Assoc | None = None
    for number, line in rows[1:]:
        cells = (line[:-1] if trailing and line.endswith("|") else line).split("|")
        if len(cells) != len(columns):
            raise AssocError(f"{name}:{number}: expected {len(columns)} '|'-separated "
                             f"columns, found {len(cells)}")

        def cell(col: str, cells: list[str] = cells) -> str:
            return cells[index[col.lower()]].strip()

        account, user, share = cell("Account"), cell("User"), cell("Share")
        if not account:
            raise AssocError(f"{name}:{number}: expected an account name in column "
                             "Account, found none")
        if "partition" in index and cell("Partition"):
            warnings.append(f"{name}:{number}: per-partition association of "
                            f"{user or account} in {cell('Partition')} is merged with the "
                            "account's")
        shares = _shares(name, number, share)
        if user:
            users.append((number, Assoc(account, user, shares)))
            continue
        if account in accounts:
            continue  # another cluster's row of the same account
        assoc = Assoc(account, None, shares)
        accounts[account] = assoc
        if account == "root":
            root = assoc
        elif parent_col is not None:
            parents[account] = cells[parent_col].strip() or "root"
        else:
            parents[account] = "root"
    if root is None:
        root = Assoc("root", None, 1)
        accounts["root"] = root
    for account, parent in parents.items():
        holder = accounts.get(parent)
        if holder is None:
            raise AssocError(f"{name}: account {account!r} names parent {parent!r}, which "
                             "has no row")
        accounts[account].parent = holder
        holder.children.append(accounts[account])
    seen: set[tuple[str, str]] = set()
    for number, assoc in users:
        holder = accounts.get(assoc.account)
        if holder is None:
            raise AssocError(f"{name}:{number}: user {assoc.user!r} is in account "
                             f"{assoc.account!r}, which has no row")
        key = (assoc.account, assoc.user or "")
        if key in seen:
            continue
        seen.add(key)
        assoc.parent = holder
        holder.children.append(assoc)
    return Associations(root, name, warnings)


def _shares(name: str, number: int, text: str) -> int | None:
    if text.lower() == "parent":
        return None
    try:
        value = int(text)
    except ValueError:
        raise AssocError(f"{name}:{number}: expected a whole number or 'parent' in column "
                         f"Share, found {text!r}") from None
    if value < 0:
        raise AssocError(f"{name}:{number}: expected Share >= 0, found {value}")
    return value
