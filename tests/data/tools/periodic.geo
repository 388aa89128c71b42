// A unit square whose right edge is periodic with its left (Translate {1,0,0}): gmsh writes
// $Periodic links for the edge and its two end points, with the affine transform.
Point(1) = {0,0,0,0.5}; Point(2) = {1,0,0,0.5}; Point(3) = {1,1,0,0.5}; Point(4) = {0,1,0,0.5};
Line(1) = {1,2}; Line(2) = {2,3}; Line(3) = {4,3}; Line(4) = {1,4};
Curve Loop(1) = {1,2,-3,-4}; Plane Surface(1) = {1};
Periodic Curve {2} = {4} Translate {1,0,0};
Physical Surface("plate", 7) = {1};
