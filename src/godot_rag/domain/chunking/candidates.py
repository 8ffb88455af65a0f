"""Candidate extraction for GDScript chunks (symbols, API calls, references).

The parser (``godot_rag.domain.chunking.gdscript``) hands this module a chunk's text
twice: ``code_text`` as written and ``scan``, the code mask with comments,
string bodies and ``$Node`` paths blanked.  Every pattern below runs on
``scan`` so that nothing inside a comment or a string can become a candidate;
only string *arguments* of reference calls (``preload("...")``) are read back
from ``code_text`` at the same offsets.  Facts that need the syntax tree
(node paths, keywords, declared names) arrive as ``(offset, value)`` pairs.

The rules are documented in the parser's module docstring; the word lists
here are the data those rules use.  Keep them small and explain additions:
each entry changes ``PARSER_VERSION`` output.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from operator import itemgetter

# Engine singletons are objects, not types: `Input.is_action_pressed` is an API
# call candidate but `Input` alone is not a symbol (the design's worked example lists Vector2 and
# AnimatedSprite2D as the symbols of `_process`, not Input).
SINGLETONS: frozenset[str] = frozenset(
    {
        "ARVRServer",
        "AudioServer",
        "CameraServer",
        "ClassDB",
        "DisplayServer",
        "EditorInterface",
        "Engine",
        "EngineDebugger",
        "GDExtensionManager",
        "Geometry",
        "Geometry2D",
        "Geometry3D",
        "IP",
        "Input",
        "InputMap",
        "JavaClassWrapper",
        "JavaScript",
        "JavaScriptBridge",
        "Marshalls",
        "NativeExtensionManager",
        "NavigationMeshGenerator",
        "NavigationServer",
        "NavigationServer2D",
        "NavigationServer3D",
        "OS",
        "Performance",
        "Physics2DServer",
        "PhysicsServer",
        "PhysicsServer2D",
        "PhysicsServer2DManager",
        "PhysicsServer3D",
        "PhysicsServer3DManager",
        "ProjectSettings",
        "RenderingServer",
        "ResourceLoader",
        "ResourceSaver",
        "ResourceUID",
        "TextServerManager",
        "ThemeDB",
        "Time",
        "TranslationServer",
        "VisualServer",
        "WorkerThreadPool",
        "XRServer",
    }
)

# Types spelled in capitals only; other all-caps identifiers are constants
# (PI, TAU, KEY_A, MAX_SPEED) and are not symbols.
CAPS_TYPES: frozenset[str] = frozenset({"AABB", "JSON", "RID", "UPNP"})

# Method names so generic (same name and meaning in Godot 3 and 4, on every
# container and math type) that `recv.method(` on a variable says nothing.
STOP_METHODS: frozenset[str] = frozenset(
    {
        "abs",
        "append",
        "ceil",
        "clear",
        "duplicate",
        "erase",
        "floor",
        "get",
        "has",
        "keys",
        "length",
        "length_squared",
        "max",
        "min",
        "pop_back",
        "pop_front",
        "push_back",
        "push_front",
        "round",
        "set",
        "sign",
        "size",
        "values",
    }
)

# Engine methods and global functions whose name or call shape differs between
# Godot 3 and Godot 4 (or that the design names as search clues).  A
# call to one of these is kept even when its receiver is implicit (`yield(`),
# `self`, a node path (`$Shape.set_deferred(`) or a longer chain.
KNOWN_CALLS: frozenset[str] = frozenset(
    {
        # coroutines, signals, deferred calls
        "yield",
        "connect",
        "disconnect",
        "is_connected",
        "emit_signal",
        "call_deferred",
        "set_deferred",
        "funcref",
        "super",
        # scenes and instancing
        "instance",
        "instantiate",
        "change_scene",
        "change_scene_to",
        "change_scene_to_file",
        "change_scene_to_packed",
        # physics bodies
        "move_and_slide",
        "move_and_slide_with_snap",
        "move_and_collide",
        # networking
        "rpc",
        "rpc_id",
        "rpc_unreliable",
        "rpc_unreliable_id",
        "rset",
        "rset_id",
        "rset_unreliable",
        "rset_unreliable_id",
        "set_network_master",
        "get_network_master",
        "is_network_master",
        "set_multiplayer_authority",
        "get_multiplayer_authority",
        "is_multiplayer_authority",
        # canvas items and nodes
        "update",
        "queue_redraw",
        "set_as_toplevel",
        "set_as_top_level",
        "raise",
        "move_to_front",
        "get_world",
        "get_world_3d",
        "set_shader_param",
        "get_shader_param",
        "set_shader_parameter",
        "get_shader_parameter",
        # tweens (Tween node in 3, Tween object in 4)
        "interpolate_property",
        "interpolate_method",
        "interpolate_callback",
        "create_tween",
        "tween_property",
        "tween_method",
        "tween_callback",
        "tween_interval",
        # tile maps
        "set_cellv",
        "get_cellv",
        "world_to_map",
        "map_to_world",
        "local_to_map",
        "map_to_local",
        # global functions renamed or removed in 4
        "stepify",
        "snapped",
        "range_lerp",
        "remap",
        "rand_range",
        "randf_range",
        "randi_range",
        "deg2rad",
        "rad2deg",
        "deg_to_rad",
        "rad_to_deg",
        "linear2db",
        "db2linear",
        "linear_to_db",
        "db_to_linear",
        "polar2cartesian",
        "cartesian2polar",
        "str2var",
        "var2str",
        "str_to_var",
        "var_to_str",
        "bytes2var",
        "var2bytes",
        "bytes_to_var",
        "var_to_bytes",
        "parse_json",
        "to_json",
        "validate_json",
        "dict2inst",
        "inst2dict",
        "ord",
        "convert",
        "type_convert",
        # empty() became is_empty()
        "empty",
        "is_empty",
    }
)

# Calls whose first string argument is a path: a reference candidate.
REFERENCE_CALLS: frozenset[str] = frozenset(
    {
        "preload",
        "load",
        "get_node",
        "get_node_or_null",
        "has_node",
        "find_node",
        "find_child",
    }
)
NODE_PATH_CALLS = frozenset({"get_node", "get_node_or_null", "has_node", "find_node", "find_child"})

# Node classes of Godot 3 and Godot 4.  Scene nodes are conventionally named
# after their type, so `$AnimatedSprite2D` names a class the judge should see
# (the design's worked example) while `$Trail` or `$HUD` do not.
KNOWN_NODE_CLASSES: frozenset[str] = frozenset(
    {
        # shared and Godot 4
        "AcceptDialog",
        "AnimatableBody2D",
        "AnimatableBody3D",
        "AnimatedSprite2D",
        "AnimatedSprite3D",
        "AnimationMixer",
        "AnimationPlayer",
        "AnimationTree",
        "Area2D",
        "Area3D",
        "AspectRatioContainer",
        "AudioListener2D",
        "AudioListener3D",
        "AudioStreamPlayer",
        "AudioStreamPlayer2D",
        "AudioStreamPlayer3D",
        "BackBufferCopy",
        "Bone2D",
        "BoneAttachment3D",
        "BoxContainer",
        "Button",
        "CPUParticles2D",
        "CPUParticles3D",
        "CSGBox3D",
        "CSGCombiner3D",
        "CSGCylinder3D",
        "CSGMesh3D",
        "CSGPolygon3D",
        "CSGSphere3D",
        "CSGTorus3D",
        "Camera2D",
        "Camera3D",
        "CanvasGroup",
        "CanvasItem",
        "CanvasLayer",
        "CanvasModulate",
        "CenterContainer",
        "CharacterBody2D",
        "CharacterBody3D",
        "CheckBox",
        "CheckButton",
        "CodeEdit",
        "CollisionPolygon2D",
        "CollisionPolygon3D",
        "CollisionShape2D",
        "CollisionShape3D",
        "ColorPicker",
        "ColorPickerButton",
        "ColorRect",
        "ConeTwistJoint3D",
        "ConfirmationDialog",
        "Container",
        "Control",
        "DampedSpringJoint2D",
        "Decal",
        "DirectionalLight2D",
        "DirectionalLight3D",
        "FileDialog",
        "FlowContainer",
        "FogVolume",
        "GPUParticles2D",
        "GPUParticles3D",
        "Generic6DOFJoint3D",
        "GraphEdit",
        "GraphNode",
        "GridContainer",
        "GridMap",
        "GrooveJoint2D",
        "HBoxContainer",
        "HFlowContainer",
        "HScrollBar",
        "HSeparator",
        "HSlider",
        "HSplitContainer",
        "HTTPRequest",
        "HingeJoint3D",
        "ItemList",
        "Label",
        "Label3D",
        "Light2D",
        "LightOccluder2D",
        "LightmapGI",
        "Line2D",
        "LineEdit",
        "LinkButton",
        "MarginContainer",
        "Marker2D",
        "Marker3D",
        "MenuBar",
        "MenuButton",
        "MeshInstance2D",
        "MeshInstance3D",
        "MultiMeshInstance2D",
        "MultiMeshInstance3D",
        "MultiplayerSpawner",
        "MultiplayerSynchronizer",
        "NavigationAgent2D",
        "NavigationAgent3D",
        "NavigationLink2D",
        "NavigationLink3D",
        "NavigationObstacle2D",
        "NavigationObstacle3D",
        "NavigationRegion2D",
        "NavigationRegion3D",
        "NinePatchRect",
        "Node",
        "Node2D",
        "Node3D",
        "OccluderInstance3D",
        "OmniLight3D",
        "OptionButton",
        "Panel",
        "PanelContainer",
        "Parallax2D",
        "ParallaxBackground",
        "ParallaxLayer",
        "Path2D",
        "Path3D",
        "PathFollow2D",
        "PathFollow3D",
        "PhysicalBone3D",
        "PinJoint2D",
        "PinJoint3D",
        "PointLight2D",
        "Polygon2D",
        "Popup",
        "PopupMenu",
        "PopupPanel",
        "ProgressBar",
        "RayCast2D",
        "RayCast3D",
        "ReferenceRect",
        "ReflectionProbe",
        "RemoteTransform2D",
        "RemoteTransform3D",
        "ResourcePreloader",
        "RichTextLabel",
        "RigidBody2D",
        "RigidBody3D",
        "ScrollContainer",
        "ShapeCast2D",
        "ShapeCast3D",
        "Skeleton2D",
        "Skeleton3D",
        "SliderJoint3D",
        "SoftBody3D",
        "SpinBox",
        "SplitContainer",
        "SpotLight3D",
        "SpringArm3D",
        "Sprite2D",
        "Sprite3D",
        "StaticBody2D",
        "StaticBody3D",
        "SubViewport",
        "SubViewportContainer",
        "TabBar",
        "TabContainer",
        "TextEdit",
        "TextureButton",
        "TextureProgressBar",
        "TextureRect",
        "TileMap",
        "TileMapLayer",
        "Timer",
        "TouchScreenButton",
        "Tree",
        "VBoxContainer",
        "VFlowContainer",
        "VScrollBar",
        "VSeparator",
        "VSlider",
        "VSplitContainer",
        "VehicleBody3D",
        "VehicleWheel3D",
        "VideoStreamPlayer",
        "Viewport",
        "VisibleOnScreenEnabler2D",
        "VisibleOnScreenEnabler3D",
        "VisibleOnScreenNotifier2D",
        "VisibleOnScreenNotifier3D",
        "VoxelGI",
        "Window",
        "WorldEnvironment",
        "XRCamera3D",
        "XRController3D",
        "XROrigin3D",
        # Godot 3 only (renamed or removed in 4)
        "ARVRAnchor",
        "ARVRCamera",
        "ARVRController",
        "ARVROrigin",
        "AnimatedSprite",
        "Area",
        "BakedLightmap",
        "BoneAttachment",
        "CPUParticles",
        "CSGBox",
        "CSGCombiner",
        "CSGCylinder",
        "CSGMesh",
        "CSGPolygon",
        "CSGSphere",
        "CSGTorus",
        "Camera",
        "ClippedCamera",
        "CollisionPolygon",
        "CollisionShape",
        "ConeTwistJoint",
        "DirectionalLight",
        "GIProbe",
        "Generic6DOFJoint",
        "HingeJoint",
        "InterpolatedCamera",
        "KinematicBody",
        "KinematicBody2D",
        "Light",
        "Listener",
        "Listener2D",
        "MeshInstance",
        "MultiMeshInstance",
        "Navigation",
        "Navigation2D",
        "NavigationAgent",
        "NavigationMeshInstance",
        "NavigationObstacle",
        "NavigationPolygonInstance",
        "OmniLight",
        "Particles",
        "Particles2D",
        "Path",
        "PathFollow",
        "PhysicalBone",
        "PinJoint",
        "PopupDialog",
        "Position2D",
        "Position3D",
        "RayCast",
        "RemoteTransform",
        "RigidBody",
        "Skeleton",
        "SliderJoint",
        "SoftBody",
        "Spatial",
        "SpotLight",
        "SpringArm",
        "Sprite",
        "StaticBody",
        "TextureProgress",
        "ToolButton",
        "Tween",
        "VehicleBody",
        "VehicleWheel",
        "VideoPlayer",
        "ViewportContainer",
        "VisibilityEnabler",
        "VisibilityEnabler2D",
        "VisibilityNotifier",
        "VisibilityNotifier2D",
        "WindowDialog",
        "YSort",
    }
)

_IDENT = r"[A-Za-z_]\w*+"
# A chain head must not follow `.` (it would be a later segment), a word
# character, or one of the GDScript sigils ($ % @ & ^) that start node paths,
# annotations and StringName/NodePath literals.  The check sits after the
# first character (a two-character lookbehind) so that the regex engine can
# skip ahead on the leading character class: several times faster than a
# leading lookbehind on long files.
_HEAD_CHECK = r"(?<![\w.$%@&^][A-Za-z_])"
R_PASCAL = re.compile(r"[A-Z](?<![\w.$%@&^][A-Z])\w*+")
R_ANNOTATION = re.compile(rf"@({_IDENT})")
# Bounded repetitions keep every pattern linear on hostile input (a line of
# `Array[` or `f(` repeated thousands of times would otherwise be quadratic).
R_TYPED_COLLECTION = re.compile(r"(?<![\w.])(Array|Dictionary)\s*\[([^\[\]\n]{0,200})\]")
# A head followed by `.member` and/or `(`: dotted accesses and bare calls in
# one pass.  Groups: head, member, call paren.
R_HEAD = re.compile(rf"([A-Za-z_]{_HEAD_CHECK}\w*+)(?=\s*[.(])(?:\s*\.\s*({_IDENT}))?(\s*\()?")
# `f(args).member(`: arguments on one line, one level of nested parentheses.
R_RECV_CALL = re.compile(rf"([a-z_]{_HEAD_CHECK}\w*+)\s*\((?:[^()\n]|\([^()\n]{{0,200}}\)){{0,200}}\)\s*\.\s*({_IDENT})\s*\(")
R_CLOSE_DOT = re.compile(r"\)\s*\.")
R_MEMBER_CALL = re.compile(rf"\.\s*({_IDENT})\s*\(")
R_AFTER_FUNC = re.compile(r"(?<!\w)func\s+$")
R_STRING_ARG = re.compile(r"""\s*(?:"((?:[^"\\\n]|\\.)*)"|'((?:[^'\\\n]|\\.)*)')""")
R_RESOURCE_PATH = re.compile(r"(?:res|user|uid)://[^\s\"'()\[\]{},;]*")

# api_call_candidates are ordered by category, then by first appearance:
# static/singleton calls are the strongest version evidence, then class
# constants and properties, then method calls on variables, then bare engine
# calls.  This reproduces the worked example's lists for `_process` and `_on_body_entered`.
CAT_CLASS_CALL = 0
CAT_CLASS_ACCESS = 1
CAT_METHOD_CALL = 2
CAT_BARE_CALL = 3


def is_type_name(name: str) -> bool:
    """PascalCase identifiers (and a few all-caps types) that are not singletons."""
    if name in SINGLETONS:
        return False
    if name in CAPS_TYPES:
        return True
    return name[:1].isupper() and any(ch.islower() for ch in name)


# The same type names recur in every chunk; the cache is bounded so that a
# long-running service reading endless user identifiers does not grow.
_is_type_name = lru_cache(maxsize=4096)(is_type_name)


def node_path_class(path: str) -> str | None:
    """The node class named by the last segment of a node path, if any."""
    text = path.lstrip("$%^").strip("\"'")
    last = text.rsplit("/", 1)[-1].lstrip("%")
    return last if last in KNOWN_NODE_CLASSES else None


_BY_RANK_AND_OFFSET = itemgetter(0, 1)
_BY_OFFSET = itemgetter(0)


def unique_in_order(items: Iterable[tuple[int, int, str]]) -> tuple[str, ...]:
    """Values sorted by (rank, offset, arrival), first occurrence kept."""
    # sorted() is stable: equal (rank, offset) keep their arrival order.
    return tuple(dict.fromkeys([item[2] for item in sorted(items, key=_BY_RANK_AND_OFFSET)]))


def _unique_by_offset(items: list[tuple[int, str]]) -> tuple[str, ...]:
    """Values sorted by (offset, arrival), first occurrence kept."""
    if len(items) < 2:
        return (items[0][1],) if items else ()
    return tuple(dict.fromkeys([item[1] for item in sorted(items, key=_BY_OFFSET)]))


def extract(
    code_text: str,
    scan: str,
    ast_symbols: list[tuple[int, str]],
    ast_refs: list[tuple[int, str]],
    ast_apis: list[tuple[int, str]],
    skip_member_offsets: frozenset[int] | set[int],
    local_types: frozenset[str] | set[str],
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """Return (symbol_candidates, api_call_candidates, reference_candidates).

    Offsets in the ``ast_*`` lists are character offsets into ``code_text``.
    ``ast_apis`` are base calls (``.foo(``, Godot 3 super calls) that rank
    with the bare calls; ``skip_member_offsets`` are the offsets of their
    dots, so the member-call pattern does not count them twice.
    ``local_types`` are enums, inner classes and constants declared in the
    file: `State.IDLE` is user code, not engine API.  ``ast_symbols`` and
    ``ast_refs`` are extended in place.
    """
    # Symbols and references all rank alike: they are ordered by offset.
    symbols = ast_symbols
    refs = ast_refs
    apis: list[tuple[int, int, str]] = [(CAT_BARE_CALL, pos, value) for pos, value in ast_apis]

    has_func = "func" in scan
    for m in R_PASCAL.finditer(scan):
        name = m.group()
        if _is_type_name(name):
            start = m.start()
            if not (has_func and _after_func(scan, start)):
                symbols.append((start, name))
    if "@" in scan:
        for m in R_ANNOTATION.finditer(scan):
            symbols.append((m.start(), "@" + m.group(1)))
    if "Array" in scan or "Dictionary" in scan:
        for m in R_TYPED_COLLECTION.finditer(scan):
            inner = ", ".join(part.strip() for part in m.group(2).split(","))
            symbols.append((m.start(), f"{m.group(1)}[{inner}]"))

    has_dot = "." in scan
    if has_dot or "(" in scan:
        # Member names already judged as the first segment of a chain; the
        # generic member-call pass must not report them again.
        handled: set[int] = set(skip_member_offsets)
        for m in R_HEAD.finditer(scan):
            head, member, paren = m.groups()
            if member is None:
                if paren is None:
                    continue  # `foo(` never follows; `foo .` with no member name
                # A bare call `name(`.
                if head in KNOWN_CALLS:
                    start = m.start()
                    if not (has_func and _after_func(scan, start)):
                        apis.append((CAT_BARE_CALL, start, head))
                elif head in REFERENCE_CALLS:
                    _reference_call(code_text, m.start(), m.end(), head, symbols, refs)
                continue
            handled.add(m.start(2))
            if head[0].isupper() and head not in local_types:
                category = CAT_CLASS_CALL if paren is not None else CAT_CLASS_ACCESS
                apis.append((category, m.start(), f"{head}.{member}"))
            elif paren is None:
                continue
            elif head == "self" or head[0].isupper():
                if member in KNOWN_CALLS:
                    apis.append((CAT_BARE_CALL, m.start(2), member))
            elif member not in STOP_METHODS:
                apis.append((CAT_METHOD_CALL, m.start(), f"{head}.{member}"))
        if has_dot:
            # The receiver-call pattern is slow and needs `).`: test for it first.
            if ")" in scan and R_CLOSE_DOT.search(scan) is not None:
                for m in R_RECV_CALL.finditer(scan):
                    head, member = m.groups()
                    if head in REFERENCE_CALLS:
                        # preload(...).instance(): the receiver is user content; the
                        # member is judged by the generic pass below.
                        continue
                    handled.add(m.start(2))
                    if member not in STOP_METHODS:
                        apis.append((CAT_METHOD_CALL, m.start(), f"{head}().{member}"))
            for m in R_MEMBER_CALL.finditer(scan):
                member = m.group(1)
                if member in KNOWN_CALLS and m.start(1) not in handled and m.start() not in handled:
                    apis.append((CAT_BARE_CALL, m.start(1), member))

    return (
        _unique_by_offset(symbols) if symbols else (),
        unique_in_order(apis) if apis else (),
        _unique_by_offset(refs) if refs else (),
    )


def _after_func(scan: str, start: int) -> bool:
    """Whether the identifier at ``start`` is the name in `func name(`."""
    window = max(0, start - 16)
    # Cheap test first: the regex needs `func` inside the window.
    return scan.find("func", window, start) >= 0 and R_AFTER_FUNC.search(scan, window, start) is not None


def _reference_call(
    code_text: str,
    start: int,
    paren_end: int,
    name: str,
    symbols: list[tuple[int, str]],
    refs: list[tuple[int, str]],
) -> None:
    # The argument is read from code_text: in the scan its body is blank.
    arg = R_STRING_ARG.match(code_text, paren_end)
    if arg is None:
        return
    path = arg.group(1) if arg.group(1) is not None else arg.group(2)
    if not path:
        return
    refs.append((start, path))
    if name in NODE_PATH_CALLS:
        node_class = node_path_class(path)
        if node_class is not None:
            symbols.append((start, node_class))


def resource_paths(string_content: str) -> list[str]:
    """`res://`, `user://` and `uid://` paths inside a string literal's content."""
    if "://" not in string_content:
        return []
    return R_RESOURCE_PATH.findall(string_content)
