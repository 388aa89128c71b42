// Prisms and hexahedra, meshed at second order (make_msh_high_order.py): wedge18 / hexahedron27
// (complete) and wedge15 / hexahedron20 (incomplete), straight-sided. No physical groups, so
// that gmsh saves (and exports to VTK) the elements of every dimension.
Point(1) = {0,0,0,1}; Point(2) = {1,0,0,1}; Point(3) = {1,1,0,1}; Point(4) = {0,1,0,1};
Point(5) = {2,0,0,1}; Point(6) = {2,1,0,1};
Line(1) = {1,2}; Line(2) = {2,3}; Line(3) = {3,4}; Line(4) = {4,1};
Line(5) = {2,5}; Line(6) = {5,6}; Line(7) = {6,3};
Curve Loop(1) = {1,2,3,4}; Plane Surface(1) = {1};
Curve Loop(2) = {5,6,7,-2}; Plane Surface(2) = {2};
Transfinite Curve{1,2,3,4,5,6,7} = 3;
Transfinite Surface{1}; Recombine Surface{1};
ext[] = Extrude {0,0,0.5} { Surface{1,2}; Layers{2}; Recombine; };
