from __future__ import annotations

from collections.abc import AsyncIterator

import grpc

from godot_rag.infra.grpc_edge import grpc_errors
from godot_rag.infra.service import ServiceContext
from godot_rag.pipeline.results import analysis_result, watch_progress
from godot_rag.pipeline.submit import SubmitInput, collect_and_submit
from godot_rag.v1 import services_pb2 as spb
from godot_rag.v1 import services_pb2_grpc as sgrpc


def submit_input(request: spb.SubmitRequest) -> SubmitInput:
    which = request.WhichOneof("input")
    return SubmitInput(
        prompt=request.prompt, path=request.path if which == "path" else "",
        expanded_text=request.expanded_text if which == "expanded_text" else "",
        snippet=request.snippet if which == "snippet" else "", snippet_kind=request.snippet_kind,
        git_url=request.git_url if which == "git_url" else "", git_ref=request.git_ref,
        archive=request.archive if which == "archive" else b"", archive_name=request.archive_name,
        project_id=request.project_id,
    )


class AnalysisServicer(sgrpc.AnalysisServiceServicer):
    def __init__(self, ctx: ServiceContext):
        self.ctx = ctx

    @grpc_errors
    async def Submit(self, request: spb.SubmitRequest, context: grpc.aio.ServicerContext) -> spb.SubmitResponse:
        submission, submitted = await collect_and_submit(self.ctx.store, self.ctx.bus, self.ctx.settings, submit_input(request))
        response = spb.SubmitResponse(source_origin=submission.source_origin, input_ref=submission.input_ref)
        for s in submitted:
            response.projects.append(spb.SubmittedProject(
                analysis_id=s.analysis_id, project_id=s.project_id, project_root=s.root, files_included=s.files_included,
                files_excluded=s.files_excluded, created=s.created,
            ))
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
