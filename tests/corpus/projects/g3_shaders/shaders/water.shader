shader_type spatial;
render_mode cull_disabled, depth_draw_alpha_prepass;

uniform vec4 shallow : hint_color = vec4(0.2, 0.6, 0.7, 0.8);
uniform sampler2D ripples : hint_normal;
uniform float wave_height = 0.1;

void vertex() {
	vec3 world = (WORLD_MATRIX * vec4(VERTEX, 1.0)).xyz;
	VERTEX.y += sin(world.x * 2.0 + TIME) * wave_height;
}

void fragment() {
	vec3 below = textureLod(SCREEN_TEXTURE, SCREEN_UV, 1.0).rgb;
	ALBEDO = mix(below, shallow.rgb, shallow.a);
	NORMALMAP = texture(ripples, UV + TIME * 0.02).rgb;
}
