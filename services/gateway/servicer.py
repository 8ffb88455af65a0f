from __future__ import annotations

import json
from collections.abc import AsyncIterator

import grpc

from godot_rag.convert import patch_to_pb
from godot_rag.infra.grpc_edge import grpc_errors
from godot_rag.infra.service import ServiceContext
from godot_rag.pipeline.patch import basis_jsonl, patch_analysis, patch_result_json
from godot_rag.pipeline.replay import ReplayOptions, ReplayStarted, replay_status, start_replay
from godot_rag.pipeline.results import analysis_result, watch_progress
from godot_rag.pipeline.submit import SubmitInput, client_of_peer, collect_and_submit
from godot_rag.pipeline.versions import chunk_page, chunk_trace, diff_results, list_versions, verdict_of_version
from godot_rag.v1 import services_pb2 as spb
from godot_rag.v1 import services_pb2_grpc as sgrpc


def submit_input(request: spb.SubmitRequest, peer: str = "") -> SubmitInput:
    which = request.WhichOneof("input")
    client, local = client_of_peer(peer)
    return SubmitInput(
        client=client,
        local_caller=local,
        prompt=request.prompt,
        path=request.path if which == "path" else "",
        expanded_text=request.expanded_text if which == "expanded_text" else "",
        snippet=request.snippet if which == "snippet" else "",
        snippet_kind=request.snippet_kind,
        git_url=request.git_url if which == "git_url" else "",
        git_ref=request.git_ref,
        archive=request.archive if which == "archive" else b"",
        archive_name=request.archive_name,
        project_id=request.project_id,
    )


def replay_options(request: spb.ReplayRequest) -> ReplayOptions:
    return ReplayOptions(
        analysis_id=request.analysis_id,
        stage=request.stage or "judge",
        chunk_ids=tuple(request.chunk_ids),
        source_files=tuple(request.source_files),
        judge=request.judge,
        prompt_version=request.prompt_version,
        cascade=request.cascade,
        limit_per_table=request.limit_per_table,
    )


def replay_response(r: ReplayStarted) -> spb.ReplayResponse:
    return spb.ReplayResponse(
        replay_id=r.replay_id,
        analysis_id=r.analysis_id,
        stage=r.stage,
        run=r.run,
        status=r.status,
        judgment_version=r.judgment_version,
        chunks=[spb.ReplayedChunk(chunk_id=c.chunk_id, source=c.source, published=c.published) for c in r.chunks],
    )


class AnalysisServicer(sgrpc.AnalysisServiceServicer):
    def __init__(self, ctx: ServiceContext):
        self.ctx = ctx

    @grpc_errors
    async def Submit(self, request: spb.SubmitRequest, context: grpc.aio.ServicerContext) -> spb.SubmitResponse:
        submission, submitted = await collect_and_submit(
            self.ctx.store, self.ctx.bus, self.ctx.settings, submit_input(request, context.peer())
        )
        response = spb.SubmitResponse(source_origin=submission.source_origin, input_ref=submission.input_ref)
        for s in submitted:
            response.projects.append(
                spb.SubmittedProject(
                    analysis_id=s.analysis_id,
                    project_id=s.project_id,
                    project_root=s.root,
                    files_included=s.files_included,
                    files_excluded=s.files_excluded,
                    created=s.created,
                )
            )
        if submitted:
            first = submitted[0]
            response.analysis_id, response.project_id = first.analysis_id, first.project_id
            response.files_included, response.files_excluded = first.files_included, first.files_excluded
        return response

    @grpc_errors
    async def Get(self, request: spb.GetRequest, context: grpc.aio.ServicerContext) -> spb.AnalysisResult:
        return await analysis_result(self.ctx.store, request.analysis_id)

    @grpc_errors
    async def WatchProgress(self, request: spb.GetRequest, context: grpc.aio.ServicerContext) -> AsyncIterator[spb.Progress]:
        async for progress in watch_progress(self.ctx.store, request.analysis_id, self.ctx.stop):
            yield progress

    @grpc_errors
    async def Patch(self, request: spb.PatchRequest, context: grpc.aio.ServicerContext) -> spb.PatchResponse:
        patched = await patch_analysis(self.ctx.store, request.analysis_id)
        return patch_to_pb(patched.analysis_id, patch_result_json(patched.result), basis_jsonl(patched.result), patched.sha256)

    @grpc_errors
    async def Replay(self, request: spb.ReplayRequest, context: grpc.aio.ServicerContext) -> spb.ReplayResponse:
        return replay_response(await start_replay(self.ctx.store, self.ctx.bus, self.ctx.settings, replay_options(request)))

    @grpc_errors
    async def GetReplay(self, request: spb.GetReplayRequest, context: grpc.aio.ServicerContext) -> spb.ReplayResponse:
        return replay_response(await replay_status(self.ctx.store, request.replay_id))

    @grpc_errors
    async def ListVersions(self, request: spb.GetRequest, context: grpc.aio.ServicerContext) -> spb.VersionsResponse:
        return await list_versions(self.ctx.store, request.analysis_id)

    @grpc_errors
    async def GetVerdict(self, request: spb.VerdictVersionRequest, context: grpc.aio.ServicerContext) -> spb.VersionedVerdict:
        return await verdict_of_version(self.ctx.store, request.analysis_id, request.version_id)

    @grpc_errors
    async def Diff(self, request: spb.DiffRequest, context: grpc.aio.ServicerContext) -> spb.DiffResponse:
        return spb.DiffResponse(json=json.dumps(await diff_results(self.ctx.store, request.a, request.b, request.analysis_id)))

    @grpc_errors
    async def GetChunkTrace(self, request: spb.ChunkTraceRequest, context: grpc.aio.ServicerContext) -> spb.ChunkTraceDetail:
        return await chunk_trace(self.ctx.store, request.analysis_id, request.chunk_id)

    @grpc_errors
    async def ListChunks(self, request: spb.ListChunksPageRequest, context: grpc.aio.ServicerContext) -> spb.ChunkPage:
        return await chunk_page(self.ctx.store, request)
