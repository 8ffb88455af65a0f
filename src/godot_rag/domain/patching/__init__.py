"""The Godot 3 -> 4 migration as edits on the AST, each tied to its basis (see docs/patch.md)."""

from godot_rag.domain.patching.engine import PATCH_VERSION, basis_lines, patch_files, patch_reads, residual_godot3, source_kind
from godot_rag.domain.patching.model import Basis, Edit, FilePatch, Hunk, Kept, PatchResult, Todo
from godot_rag.domain.patching.symbols import ProjectSymbols, Receiver, SharedProjectSymbols

__all__ = [
    "PATCH_VERSION",
    "basis_lines",
    "patch_files",
    "patch_reads",
    "residual_godot3",
    "source_kind",
    "Basis",
    "Edit",
    "FilePatch",
    "Hunk",
    "Kept",
    "PatchResult",
    "Todo",
    "ProjectSymbols",
    "Receiver",
    "SharedProjectSymbols",
]
