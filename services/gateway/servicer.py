from __future__ import annotations

import asyncio

import grpc

from godot_rag.domain.ingest.policy import IngestError
from godot_rag.errors import NotFoundError
from godot_rag.infra.service import ServiceContext
from godot_rag.pipeline.results import analysis_result, verdict_pb
from godot_rag.pipeline.submit import pipeline_version_for, collect, submit_all
from godot_rag.v1 import services_pb2 as spb
from godot_rag.v1 import services_pb2_grpc as sgrpc


class AnalysisServicer(sgrpc.AnalysisServiceServicer):
    def __init__(self, ctx: ServiceContext):
        self.ctx = ctx

    async def Submit(self, request: spb.SubmitRequest, context: grpc.aio.ServicerContext):
        if not request.prompt.strip():
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "a prompt is required")
        which = request.WhichOneof("input")
        if which is None:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                "nothing to analyse: set path, git_url, archive, expanded_text or snippet")
        try:
            # Cloning, extracting and reading files block: keep them off the event loop.
            submission = await asyncio.to_thread(
                collect, path=request.path if which == "path" else "",
                expanded_text=request.expanded_text if which == "expanded_text" else "",
                snippet=request.snippet if which == "snippet" else "", snippet_kind=request.snippet_kind,
                git_url=request.git_url if which == "git_url" else "", git_ref=request.git_ref,
                archive=request.archive if which == "archive" else b"", archive_name=request.archive_name,
                project_id=request.project_id, settings=self.ctx.settings,
            )
        except IngestError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        submitted = await submit_all(self.ctx.store, self.ctx.bus, submission, request.prompt,
                                     pipeline_version_for(self.ctx.settings))
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

    async def Get(self, request: spb.GetRequest, context: grpc.aio.ServicerContext):
        try:
            return await analysis_result(self.ctx.store, request.analysis_id)
        except NotFoundError as exc:
            await context.abort(grpc.StatusCode.NOT_FOUND, str(exc))

    async def WatchProgress(self, request: spb.GetRequest, context: grpc.aio.ServicerContext):
        analysis = await self.ctx.store.get_analysis(request.analysis_id)
        if analysis is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no analysis {request.analysis_id}")
        last = None
        while True:
            analysis = await self.ctx.store.get_analysis(request.analysis_id)
            p = await self.ctx.store.progress(request.analysis_id)
            progress = spb.Progress(
                analysis_id=request.analysis_id, status=analysis["status"], files_total=p["files_total"],
                files_chunked=p["files_chunked"], chunks_total=p["chunks_total"], chunks_done=p["chunks_done"],
                chunks_failed=p["chunks_failed"],
            )
            if analysis["status"] == "done":
                v = verdict_pb(await self.ctx.store.get_verdict(request.analysis_id))
                if v is not None:
                    progress.verdict.CopyFrom(v)
            if progress != last:
                yield progress
                last = progress
            if analysis["status"] == "done" or self.ctx.stop.is_set():
                return
            await asyncio.sleep(0.25)
